import { clearLine, createInterface, cursorTo } from "node:readline";
import type { PersonaClient, RoomEvent, RoomEventStream, Schemas } from "../sdk/src/index.ts";
import { describeError } from "./errors.ts";
import type { Output } from "./output.ts";

interface RoomChatOptions {
  client: PersonaClient;
  baseUrl: string;
  out: Output;
  roomId: string;
  /** Earlier messages to show first. */
  history: number;
}

const PROMPT = "you> ";
/** After the last piped line: how long to wait for the replies to arrive on the event stream. */
const REPLY_WAIT_MS = 30_000;

/**
 * The interactive room: the room's events printed as they happen (others' messages, persona
 * replies as they are written, people and personas coming and going), and each line typed sent as
 * a message. Output lines are written above the prompt, which is redrawn with what was being typed.
 * With --json every event is one JSON line on stdout and the prompt moves to stderr. Ends with
 * /exit, Ctrl-D or Ctrl-C, or when the room is deleted or the user removed from it.
 */
export async function runRoomChat({ client, baseUrl, out, roomId, history: historyCount }: RoomChatOptions): Promise<void> {
  const [room, profile] = await Promise.all([client.rooms.get(roomId), client.auth.me()]);
  const me = { id: profile.id, name: profile.display_name || profile.username };
  // The stream opens first; history read after it cannot miss a message, and a message both
  // read and streamed is shown once.
  const buffered: RoomEvent[] = [];
  let deliver: (event: RoomEvent) => void = (event) => void buffered.push(event);
  let opened!: () => void;
  const open = new Promise<void>((resolve) => (opened = resolve));
  const events = client.rooms.events(room.id, { onOpen: () => opened() });
  const streaming = (async () => {
    for await (const event of events) deliver(event);
  })();
  await Promise.race([open, streaming]);
  const history = historyCount > 0 ? (await client.rooms.messages(room.id, { limit: historyCount })).data.reverse() : [];
  return session({ client, baseUrl, out, room, me, history, events, buffered, streaming, listen: (handler) => (deliver = handler) });
}

interface SessionOptions {
  client: PersonaClient;
  baseUrl: string;
  out: Output;
  room: Schemas["Room"];
  me: { id: string; name: string };
  history: Schemas["RoomMessage"][];
  events: RoomEventStream;
  /** Events that arrived before the session started, in order. */
  buffered: RoomEvent[];
  /** Settles when the event stream ends; rejects with what ended it. */
  streaming: Promise<void>;
  listen: (handler: (event: RoomEvent) => void) => void;
}

function session({ client, baseUrl, out, room, me, history, events, buffered, streaming, listen }: SessionOptions): Promise<void> {
  const terminal = Boolean(process.stdin.isTTY);
  const screen = out.json ? process.stderr : process.stdout;
  const styled = process.stdout.isTTY && !out.json;
  const bold = (text: string) => (styled ? `\x1b[1m${text}\x1b[22m` : text);
  const dim = (text: string) => (styled ? `\x1b[2m${text}\x1b[22m` : text);
  const names = new Map<string, string>([[me.id, me.name]]);
  for (const message of history) names.set(message.sender.id, message.sender.name);
  /** Messages on the screen already. */
  const shown = new Set(history.map((message) => message.id));

  const rl = createInterface({ input: process.stdin, output: screen, terminal, prompt: terminal ? PROMPT : "" });
  /** Persona replies the sends answered that the stream has not shown yet. */
  const awaited = new Set<string>();
  let writing: { personaId: string } | undefined;
  let finished = false;

  /** A whole line above the prompt (the prompt and the half-typed line are drawn again after it). */
  const print = (text: string) => {
    if (out.json || finished) return;
    endWriting();
    if (terminal) {
      clearLine(process.stdout, 0);
      cursorTo(process.stdout, 0);
    }
    process.stdout.write(`${text}\n`);
    if (terminal) rl.prompt(true);
  };
  const endWriting = () => {
    if (!writing) return;
    writing = undefined;
    process.stdout.write("\n");
  };
  const nameOf = async (userId: string) => {
    if (!names.has(userId)) names.set(userId, await client.social.profile(userId).then((profile) => profile.username, () => userId));
    return names.get(userId)!;
  };

  const show = async (event: RoomEvent) => {
    if (out.json) {
      process.stdout.write(`${JSON.stringify(event)}\n`);
      return;
    }
    switch (event.type) {
      case "delta": {
        // One reply is drawn as it is written; another one written meanwhile shows when complete.
        if (writing && writing.personaId !== event.data.persona_id) return;
        if (!writing) {
          if (terminal) {
            clearLine(process.stdout, 0);
            cursorTo(process.stdout, 0);
          }
          process.stdout.write(`${bold(`${event.data.persona_name}>`)} `);
          writing = { personaId: event.data.persona_id };
        }
        process.stdout.write(event.data.content);
        return;
      }
      case "message": {
        const { sender, content } = event.data;
        names.set(sender.id, sender.name);
        if (sender.type === "persona" && writing?.personaId === sender.id) {
          writing = undefined;
          process.stdout.write("\n");
          if (terminal) rl.prompt(true);
        } else if (sender.type === "persona" || sender.id !== me.id) {
          // Your own messages are on the screen already, as you typed them.
          print(`${bold(`${sender.name}>`)} ${content}`);
        }
        return;
      }
      case "member_joined":
        return print(dim(`* ${event.data.user_id === me.id ? "you" : await nameOf(event.data.user_id)} joined the room`));
      case "member_left":
        return print(dim(`* ${event.data.user_id === me.id ? "you" : await nameOf(event.data.user_id)} left the room`));
      case "persona_added":
        return print(dim(`* ${event.data.name} (persona) joined the room`));
      case "persona_removed":
        return print(dim(`* ${event.data.name} (persona) left the room`));
      case "closed":
        return print(event.data.reason === "removed" ? "* You are no longer a member of this room." : "* The room was deleted.");
    }
  };

  return new Promise<void>((resolve, reject) => {
    let inputClosed = false;
    let pumping = false;
    const queue: string[] = [];
    let replyWait: ReturnType<typeof setTimeout> | undefined;

    const finish = (error?: unknown) => {
      if (finished) return;
      if (!out.json) endWriting();
      finished = true;
      clearTimeout(replyWait);
      process.off("SIGINT", onSigint);
      events.close();
      rl.close();
      if (error) reject(error);
      else resolve();
    };
    // Piped input has ended: leave once the replies to what was sent have been shown.
    const finishWhenShown = () => {
      if (awaited.size === 0) return finish();
      replyWait ??= setTimeout(() => finish(), REPLY_WAIT_MS);
    };
    const onSigint = () => finish();

    const send = async (content: string) => {
      try {
        const sent = await client.rooms.send(room.id, { content });
        for (const reply of sent.persona_responses) if (!shown.has(reply.id)) awaited.add(reply.id);
        if (sent.persona_responses.length === 0 && !out.json) print(dim("(no persona answered)"));
      } catch (error) {
        const { message } = describeError(error, baseUrl);
        if (out.json) process.stdout.write(`${JSON.stringify({ type: "error", code: (error as { code?: string }).code ?? "error", message })}\n`);
        else print(`persona: ${message}`);
        process.exitCode = 1;
      }
    };

    // Lines are sent one after another, whatever arrives while a send waits for its replies.
    const pump = async () => {
      if (pumping) return;
      pumping = true;
      while (queue.length && !finished) {
        const line = queue.shift()!.trim();
        if (!line) continue;
        if (line === "/exit" || line === "/quit") {
          queue.length = 0;
          finish();
          break;
        }
        if (!terminal && !out.json) print(`${PROMPT}${line}`);
        if (line.startsWith("/") && !line.startsWith("//")) print(`(unknown command ${line}; try /exit)`);
        else await send(line.startsWith("//") ? line.slice(1) : line);
      }
      pumping = false;
      if (inputClosed) finishWhenShown();
      // A reply still being written keeps the line; the prompt comes back when it is complete.
      else if (!finished && terminal && !writing) rl.prompt(true);
    };

    rl.on("line", (line) => {
      queue.push(line);
      void pump();
    });
    rl.on("SIGINT", () => finish());
    process.on("SIGINT", onSigint);
    rl.on("close", () => {
      inputClosed = true;
      if (!pumping) finishWhenShown();
    });

    if (out.json) {
      process.stdout.write(`${JSON.stringify({ type: "room", room_id: room.id, name: room.name })}\n`);
    } else {
      const personas = room.personas.map((persona) => persona.name).join(", ") || "none";
      process.stdout.write(`Room ${bold(room.name)} (${room.id}): ${room.members.length} members; personas: ${personas}.\n`);
      if (terminal) process.stdout.write(dim("@name asks a persona; /exit or Ctrl-D leaves.\n"));
      for (const message of history) {
        process.stdout.write(message.sender.id === me.id ? `${PROMPT}${message.content}\n` : `${bold(`${message.sender.name}>`)} ${message.content}\n`);
      }
      process.stdout.write("\n");
    }

    // Events are shown one after another, in the order they came.
    let showing = Promise.resolve();
    const handle = (event: RoomEvent) => {
      showing = showing.then(async () => {
        if (finished) return;
        if (event.type === "message") {
          if (shown.has(event.data.id)) return;
          shown.add(event.data.id);
          awaited.delete(event.data.id);
        }
        await show(event);
        if (event.type === "closed") finish();
        else if (inputClosed && !pumping && awaited.size === 0) finish();
      });
    };
    for (const event of buffered) handle(event);
    listen(handle);
    // The stream ends by itself only after `closed`, or on an error reconnecting cannot cure.
    streaming.then(
      () => showing.then(() => finish()),
      (error: unknown) => showing.then(() => finish(error)),
    );
    rl.prompt();
  });
}
