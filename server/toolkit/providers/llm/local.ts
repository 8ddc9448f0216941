import { setImmediate as nextTurn } from "node:timers/promises";
import { LOCAL_CHAT_MODEL } from "../../config.ts";
import { countChatTokens, countTokens, truncateToTokens } from "./tokens.ts";
import { localJson } from "./local-json.ts";
import { abortError, UnsupportedOption, type ChatCompletion, type ChatModelProvider, type ChatRequest, type ChatStreamChunk, type ChatTurn, type FinishReason, type ModelOptions } from "./types.ts";

/**
 * The offline default: no model, no network. It answers deterministically from what the context
 * holds (the persona's name, the user's last message, the first knowledge excerpt), so every
 * feature works and can be tested without a provider, and its replies say they are offline.
 */
export class LocalChatModel implements ChatModelProvider {
  readonly name = "local";

  refuses(options: ModelOptions): UnsupportedOption | undefined {
    if (!options.tools?.length) return undefined;
    return new UnsupportedOption("tools", "The offline local model cannot call tools; configure a model provider that can (OPENAI_BASE_URL)");
  }

  async complete(request: ChatRequest): Promise<ChatCompletion> {
    throwIfAborted(request.signal);
    const { content, finishReason } = localAnswer(request);
    return { content, model: LOCAL_CHAT_MODEL, usage: { inputTokens: countChatTokens(request.messages), outputTokens: countTokens(content) }, finishReason };
  }

  async *stream(request: ChatRequest): AsyncIterable<ChatStreamChunk> {
    throwIfAborted(request.signal);
    const { content, finishReason } = localAnswer(request);
    for (const [index, piece] of wordGroups(content, WORDS_PER_PIECE).entries()) {
      // Give the event loop a turn between pieces, as a real stream would, without slowing tests.
      if (index > 0) await nextTurn();
      throwIfAborted(request.signal);
      yield { type: "delta", content: piece };
    }
    yield { type: "usage", usage: { inputTokens: countChatTokens(request.messages), outputTokens: countTokens(content) }, finishReason };
  }
}

const WORDS_PER_PIECE = 3;
const QUOTE_MAX_CHARS = 120;
const EXCERPT_MAX_CHARS = 200;
const TITLE_MAX_WORDS = 5;
const OFFLINE_LABEL = "(offline local model)";

/** The whole reply for a request, cut to its output token limit. */
export function localReply(request: ChatRequest): string {
  return localAnswer(request).content;
}

/**
 * The reply and why it ended. The options the offline model honours: `responseFormat` (a JSON
 * object holding the reply, or a value shaped by the schema), `stop` (the reply ends before the
 * first stop sequence), the token cap (`length`), and `seed` (every reply is deterministic, so any
 * seed gives the same reply each time). Sampling options change nothing in a model that does not
 * sample. Tools it cannot call: refused.
 */
export function localAnswer(request: ChatRequest): { content: string; finishReason: FinishReason } {
  const options = request.options ?? {};
  const refused = LocalChatModel.prototype.refuses(options);
  if (refused) throw refused;
  const persona = personaName(request.messages);
  let text =
    request.purpose === "title" ? titleFor(request.messages)
    : request.purpose === "greeting" ? greetingFor(persona)
    : request.purpose === "summary" ? summaryFor(request.messages)
    : request.messages.at(-1)?.role === "assistant" ? continuationFor(persona)
    : replyFor(persona, request.messages);
  if (options.responseFormat && options.responseFormat.type !== "text") text = localJson(options.responseFormat, text);
  const stopAt = Math.min(...(options.stop ?? []).map((sequence) => text.indexOf(sequence)).filter((at) => at >= 0));
  if (Number.isFinite(stopAt)) text = text.slice(0, stopAt);
  if (request.maxOutputTokens === undefined) return { content: text, finishReason: "stop" };
  const cut = truncateToTokens(text, request.maxOutputTokens);
  return { content: cut, finishReason: cut.length < text.length ? "length" : "stop" };
}

/** The offline model's continuation of a prefilled assistant turn (the client's text is not repeated). */
function continuationFor(persona: string | undefined): string {
  return ` …and that is where ${persona ?? "the assistant"} goes on ${OFFLINE_LABEL}.`;
}

function replyFor(persona: string | undefined, turns: ChatTurn[]): string {
  const speaker = `${persona ?? "Assistant"} ${OFFLINE_LABEL}:`;
  const lastUserIndex = turns.findLastIndex((turn) => turn.role === "user");
  if (lastUserIndex < 0) return `${speaker} I am here whenever you want to talk.`;
  const sentences = [`${speaker} You said "${clip(oneLine(turns[lastUserIndex]!.content), QUOTE_MAX_CHARS)}".`];
  const excerpt = firstExcerpt(turns);
  if (excerpt) sentences.push(`According to ${excerpt.source}, "${excerpt.sentence}"`);
  const earlier = turns.slice(0, lastUserIndex).filter((turn) => turn.role !== "system").length;
  sentences.push(
    earlier === 0 ? "This is the start of our conversation." : `We have exchanged ${earlier} earlier ${earlier === 1 ? "message" : "messages"}.`,
  );
  return sentences.join(" ");
}

/**
 * An extractive summary, deterministic and fact-preserving: the summary so far, then every
 * statement the user made (questions and the offline model's own echoes carry no new facts), once
 * each, as bullets, oldest first. Cut to the output limit, it loses the newest facts first, which
 * the recent history still holds.
 */
function summaryFor(turns: ChatTurn[]): string {
  const input = turns.findLast((turn) => turn.role === "user")?.content ?? "";
  const [, previous = "", messages = ""] = /^Summary so far:\n([\s\S]*?)\n\nMessages:\n([\s\S]*)$/.exec(input) ?? [];
  const facts = previous.split("\n").map((line) => line.replace(/^-\s*/, "").trim()).filter((line) => line && line !== "(none)");
  for (const line of messages.split("\n")) {
    const said = /^User:(.*)$/.exec(line)?.[1]?.trimStart();
    for (const sentence of said?.match(/[^.!?]+[.!?]*/g) ?? []) {
      const fact = sentence.trim();
      if (fact && !fact.endsWith("?") && !facts.includes(fact)) facts.push(fact);
    }
  }
  return facts.map((fact) => `- ${fact}`).join("\n");
}

function greetingFor(persona: string | undefined): string {
  return persona ? `Hello, I am ${persona}, what shall we talk about today?` : "Hello, what shall we talk about today?";
}

// Words a title can do without.
const STOP_WORDS = new Set(
  ("a an and are as at be but by can could do does for from had has have how i i'm if in is it its me my no not of on or our please " +
    "should so tell than that the their them then there these they this to us was we were what when where which who why will with " +
    "would you your yours about just some any all").split(" "),
);

function titleFor(turns: ChatTurn[]): string {
  const firstUser = turns.find((turn) => turn.role === "user");
  const words = firstUser?.content.match(/[\p{L}\p{N}][\p{L}\p{N}'’-]*/gu) ?? [];
  const keyWords: string[] = [];
  for (const word of words) {
    const lower = word.toLowerCase();
    if (STOP_WORDS.has(lower) || keyWords.some((kept) => kept.toLowerCase() === lower)) continue;
    keyWords.push(word === lower ? word[0]!.toUpperCase() + word.slice(1) : word);
    if (keyWords.length === TITLE_MAX_WORDS) break;
  }
  return keyWords.length > 0 ? keyWords.join(" ") : "New conversation";
}

/**
 * The persona's name from its instructions: the capitalised words after "You are" or "Your name
 * is" ("You are Captain Nova, a starship pilot" → "Captain Nova"). Lower-case continuations ("You
 * are a helpful assistant") name nobody.
 */
function personaName(turns: ChatTurn[]): string | undefined {
  for (const turn of turns) {
    if (turn.role !== "system") continue;
    const match = /\b(?:You are|You're|Your name is)\s+(\p{Lu}[\p{L}\p{N}'’-]*(?:[ \t]+\p{Lu}[\p{L}\p{N}'’-]*){0,4})/u.exec(turn.content);
    if (match) return match[1];
  }
  return undefined;
}

/** The first `[source: name#n]` excerpt of the system turns, reduced to its first sentence. */
function firstExcerpt(turns: ChatTurn[]): { source: string; sentence: string } | undefined {
  for (const turn of turns) {
    if (turn.role !== "system") continue;
    const excerpt = firstSourceBlock(turn.content);
    if (!excerpt) continue;
    const text = oneLine(excerpt.body);
    const sentence = /^.*?[.!?](?=\s|$)/.exec(text)?.[0] ?? text;
    if (sentence) return { source: excerpt.source, sentence: clip(sentence, EXCERPT_MAX_CHARS) };
  }
  return undefined;
}

/**
 * The first `[source: name]` line and the lines after it up to the next such line: read line by
 * line, where one regular expression over the whole turn backtracked over runs of blank lines.
 */
function firstSourceBlock(content: string): { source: string; body: string } | undefined {
  const lines = content.split("\n");
  const start = lines.findIndex((line) => SOURCE_LINE.test(line));
  if (start < 0) return undefined;
  const source = SOURCE_LINE.exec(lines[start]!)![1]!.trim();
  const rest = lines.slice(start + 1);
  const end = rest.findIndex((line) => line.startsWith("[source:"));
  return { source, body: (end < 0 ? rest : rest.slice(0, end)).join("\n") };
}

const SOURCE_LINE = /^\[source:([^\]]+)\]/;

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** At most `max` characters, cut at a word boundary when there is one. */
function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max - 1);
  const lastSpace = cut.lastIndexOf(" ");
  return `${lastSpace > max / 2 ? cut.slice(0, lastSpace) : cut}…`;
}

/** The text in pieces of `size` words, each keeping its following whitespace: joined, they are the text. */
function wordGroups(text: string, size: number): string[] {
  // Leading whitespace only with the first word, so that a run of it is scanned once (issue 31).
  const words = text.match(/^\s*\S+\s*|\S+\s*/g) ?? [];
  const groups: string[] = [];
  for (let i = 0; i < words.length; i += size) groups.push(words.slice(i, i + size).join(""));
  return groups;
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortError(signal);
}
