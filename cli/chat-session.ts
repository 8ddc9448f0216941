import { createInterface } from "node:readline";
import type { ChatStream, PersonaClient, Schemas } from "../sdk/src/index.ts";
import { TREE_HELP, treeCommands } from "./chat-tree.ts";
import { describeError } from "./errors.ts";
import type { Output } from "./output.ts";

export interface ChatTarget {
  conversationId: string;
  personaId: string;
  /** Undefined when the persona cannot be read (e.g. no longer public): the chat still works. */
  persona: Schemas["Persona"] | undefined;
  /** Nothing said yet: its greeting opens it. */
  isNew: boolean;
  /** The greeting a new conversation starts with: its first message, stored by the server. */
  greeting: Schemas["Message"] | undefined;
}

/** The conversation's greeting among its messages (the first one, marked `greeting`), if it has one. */
export function greetingOf(messages: readonly Schemas["Message"][]): Schemas["Message"] | undefined {
  return messages.find((message) => message.greeting === true);
}

/**
 * The greeting a conversation just made starts with, read back from the server. A key that may
 * start conversations but not read them (`conversations:write` alone) chats without it shown.
 */
export async function storedGreeting(client: PersonaClient, conversationId: string): Promise<Schemas["Message"] | undefined> {
  try {
    return greetingOf((await client.conversations.get(conversationId)).messages);
  } catch {
    return undefined;
  }
}

interface SessionOptions {
  client: PersonaClient;
  baseUrl: string;
  out: Output;
  target: ChatTarget;
  /** Earlier messages to show first (continuing a conversation), oldest first. */
  history: Schemas["Message"][];
}

const PROMPT = "you> ";
const QUIT_WINDOW_MS = 2000;

/**
 * The interactive chat: a readline prompt, each line sent as a message and the reply streamed as
 * it arrives. Human output goes to stdout; with --json every event is one JSON line on stdout and
 * the prompt moves to stderr. Lines typed while a reply streams are queued, not lost.
 */
export function runChatSession({ client, baseUrl, out, target, history }: SessionOptions): Promise<void> {
  const terminal = Boolean(process.stdin.isTTY);
  const screen = out.json ? process.stderr : process.stdout;
  const bold = (text: string) => (process.stdout.isTTY && !out.json ? `\x1b[1m${text}\x1b[22m` : text);
  const dim = (text: string) => (process.stdout.isTTY && !out.json ? `\x1b[2m${text}\x1b[22m` : text);
  const name = target.persona?.name ?? "assistant";
  const emit = (event: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(event)}\n`);
  const show = (text: string) => {
    if (!out.json) process.stdout.write(text);
  };

  let conversationId = target.conversationId;
  let current: { stop: () => void; abort: () => void; stopped: boolean } | undefined;
  const queue: string[] = [];
  let pumping = false;
  let inputClosed = false;
  let lastIdleInterrupt = 0;

  const rl = createInterface({ input: process.stdin, output: screen, terminal, prompt: terminal ? PROMPT : "" });

  const opened = (isNew: boolean, greeting: Schemas["Message"] | undefined) => {
    if (out.json) {
      emit({ type: "conversation", conversation_id: conversationId, persona_id: target.personaId, new: isNew });
      // The greeting is the persona's first turn, for scripts as for people.
      if (isNew && greeting) emit({ type: "greeting", content: greeting.content, message_id: greeting.id });
      return;
    }
    show(`Chatting with ${bold(name)} (conversation ${conversationId}).\n`);
    if (terminal) show(`Ctrl-C (or /stop) stops a reply, /new starts a new conversation, /exit quits.\n${TREE_HELP}\n`);
    // The greeting is the conversation's first message, stored by the server: shown once, here.
    if (isNew && greeting) {
      show(`\n${bold(`${name}>`)} ${greeting.content}\n`);
      const others = (greeting.alternative_count ?? 1) - 1;
      if (others > 0 && terminal) show(dim(`(${others} other greeting${others === 1 ? "" : "s"}: /branch lists them)\n`));
    }
    show("\n");
  };

  const send = (content: string) => play(client.conversations.stream(conversationId, { content }));

  async function play(stream: ChatStream) {
    // Stop on the server (issue 21): the partial reply is stored and the stream ends with its done.
    // Before the stream has started there is no generation to stop: stop reading instead.
    const handle = { stop: () => void stream.stop().catch(() => stream.abort()), abort: () => stream.abort(), stopped: false };
    current = handle;
    show(`${bold(`${name}>`)} `);
    let ended = false;
    try {
      for await (const event of stream) {
        if (out.json) emit(event);
        if (event.type === "delta") show(event.content);
        else if (event.type === "error") show(`\n[the reply failed: ${event.message} (${event.code})]`);
        else if (event.type === "done" && event.citations?.length) show(`\n${dim(`[sources: ${sources(event.citations)}]`)}`);
        if (event.type !== "delta") ended = true;
      }
      if (handle.stopped) {
        show(" [stopped]");
        if (out.json) emit({ type: "aborted" });
      } else if (!ended) show("\n[the connection closed before the reply was complete]");
    } catch (error) {
      if (handle.stopped) show(" [stopped]");
      else {
        const { message } = describeError(error, baseUrl);
        show(`\n`);
        process.stderr.write(`persona: ${message}\n`);
        if (out.json) emit({ type: "error", code: (error as { code?: string }).code ?? "error", message });
      }
    } finally {
      current = undefined;
      show("\n\n");
    }
  }

  const tree = treeCommands({ client, conversationId: () => conversationId, play, show });
  const command = async (line: string) => {
    try {
      if (!(await tree(line))) show(`(unknown command ${line}; try /new, /regen, /edit, /branch or /exit)\n`);
    } catch (error) {
      process.stderr.write(`persona: ${describeError(error, baseUrl).message}\n`);
    }
  };

  const startNew = async () => {
    try {
      const conversation = await client.conversations.create({ persona_id: target.personaId });
      conversationId = conversation.id;
      opened(true, await storedGreeting(client, conversation.id));
    } catch (error) {
      process.stderr.write(`persona: ${describeError(error, baseUrl).message}\n`);
    }
  };

  return new Promise<void>((resolve) => {
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      process.off("SIGINT", onProcessSigint);
      if (terminal && !out.json) show("\n");
      resolve();
    };

    // Lines are handled strictly one after another, whatever arrives while a reply streams.
    const pump = async () => {
      if (pumping) return;
      pumping = true;
      while (queue.length && !finished) {
        const line = queue.shift()!.trim();
        if (!line) continue;
        if (line === "/exit" || line === "/quit") {
          queue.length = 0;
          rl.close();
          break;
        }
        // Piped input is not echoed by a terminal: the transcript shows it like a typed line.
        if (!terminal) show(`${PROMPT}${line}\n`);
        if (line === "/new") await startNew();
        else if (line === "/stop") show("(no reply is running)\n");
        else if (line.startsWith("/") && !line.startsWith("//")) await command(line);
        else await send(line.startsWith("//") ? line.slice(1) : line);
      }
      pumping = false;
      if (inputClosed) finish();
      else if (!finished) rl.prompt();
    };

    const interrupt = () => {
      if (current) {
        // The first Ctrl-C stops the generation and waits for its stored end; a second stops waiting.
        if (current.stopped) current.abort();
        else {
          current.stopped = true;
          current.stop();
        }
        return;
      }
      if (Date.now() - lastIdleInterrupt < QUIT_WINDOW_MS) {
        rl.close();
        return;
      }
      lastIdleInterrupt = Date.now();
      screen.write("\n(press Ctrl-C again to quit, or type /exit)\n");
      rl.prompt();
    };
    // Without a terminal, readline sees no keys: Ctrl-C arrives as a signal.
    const onProcessSigint = () => (current ? interrupt() : rl.close());

    rl.on("SIGINT", interrupt);
    process.on("SIGINT", onProcessSigint);
    rl.on("line", (line) => {
      // `/stop` acts on the reply under way at once rather than waiting its turn behind it.
      if (line.trim() === "/stop" && current) return interrupt();
      queue.push(line);
      void pump();
    });
    // End of input (Ctrl-D, or the end of piped lines): queued lines and the reply under way finish first.
    rl.on("close", () => {
      inputClosed = true;
      if (!pumping) finish();
    });

    if (!out.json && history.length) {
      for (const m of history) show(`${m.role === "user" ? PROMPT : `${bold(`${name}>`)} `}${m.content}\n`);
    }
    opened(target.isNew, target.greeting);
    rl.prompt();
  });
}

/** "mars.txt #2, saturn.md #0": the documents and chunks a reply drew on, best first. */
function sources(citations: { filename: string; chunk_index: number }[]): string {
  return citations.map((c) => `${c.filename} #${c.chunk_index}`).join(", ");
}
