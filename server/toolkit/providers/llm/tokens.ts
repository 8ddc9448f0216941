import { createRequire } from "node:module";
import type { ChatTurn } from "./types.ts";

/**
 * Token counting with the o200k_base encoding (gpt-4o and later). Other OpenAI-compatible models
 * tokenize differently; the counts are then estimates, good enough for context budgets.
 */

// OpenAI's documented overhead: every message costs 3 tokens besides its role and content, and the
// reply is primed with 3 more.
const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_REPLY = 3;

// History turns are counted again on every chat request; remembering recent counts makes that a
// map lookup. Bounded so that memory stays small; the oldest entry goes first.
const CACHE_ENTRIES = 10_000;
// Long texts are rare and unlikely to repeat: counting them is not worth keeping them in memory.
const CACHE_MAX_TEXT_LENGTH = 8_192;
const cache = new Map<string, number>();

type GptEncoding = typeof import("gpt-tokenizer/encoding/o200k_base");

interface Encoding {
  encode: (text: string) => number[];
  decode: GptEncoding["decode"];
  /** The encoding's pre-tokenizer: words, numbers, punctuation and spaces become separate pieces. */
  pieces: RegExp;
}

let encoding: Encoding | undefined;

/**
 * gpt-tokenizer, loaded on first use and synchronously (callers count inside synchronous code). Its
 * ranks are a JavaScript module: a fraction of a second and 70 MB, where js-tiktoken's rank file
 * took seconds and 200 MB; nothing loads it at start
 * (docs/adr/0072-gpt-tokenizer-instead-of-js-tiktoken-loaded-on-first-use.md).
 */
function getEncoding(): Encoding {
  if (!encoding) {
    const require = createRequire(import.meta.url);
    const gpt = require("gpt-tokenizer/encoding/o200k_base") as GptEncoding;
    const { O200K_TOKEN_SPLIT_REGEX } = require("gpt-tokenizer/encodingParams/constants") as { O200K_TOKEN_SPLIT_REGEX: RegExp };
    gpt.setMergeCacheSize(20_000);
    // No special tokens: `<|endoftext|>` typed by a user is ordinary text, never an error.
    const options = { disallowedSpecial: new Set<string>() };
    encoding = {
      encode: (text) => gpt.encode(text, options),
      decode: gpt.decode,
      pieces: new RegExp(O200K_TOKEN_SPLIT_REGEX.source, "gu"),
    };
  }
  return encoding;
}

// Byte-pair merging is quadratic in a piece's length, and a piece can be a whole paragraph (Chinese
// has no spaces; a pasted blob has none either): 50,000 letters took seconds. Longer pieces are
// encoded in slices of about this many bytes, which changes the count by at most a token a slice.
const MAX_PIECE_BYTES = 64;

/** The o200k_base token ids of `text`, as js-tiktoken's `encode` returns them (long pieces aside). */
function encode(text: string): number[] {
  const { encode: encodeRun, pieces } = getEncoding();
  const tokens: number[] = [];
  // Runs of ordinary pieces are encoded together; only an over-long piece is encoded apart, sliced.
  let runStart = 0;
  for (const match of text.matchAll(pieces)) {
    const piece = match[0];
    if (Buffer.byteLength(piece) <= MAX_PIECE_BYTES) continue;
    if (match.index > runStart) tokens.push(...encodeRun(text.slice(runStart, match.index)));
    for (const slice of slices(piece)) tokens.push(...encodeRun(slice));
    runStart = match.index + piece.length;
  }
  if (runStart === 0) return encodeRun(text);
  if (runStart < text.length) tokens.push(...encodeRun(text.slice(runStart)));
  return tokens;
}

/** `piece` cut into slices of at most MAX_PIECE_BYTES UTF-8 bytes, never inside a character. */
function* slices(piece: string): Generator<string> {
  let slice = "";
  let bytes = 0;
  for (const char of piece) {
    const size = Buffer.byteLength(char);
    if (bytes + size > MAX_PIECE_BYTES) {
      yield slice;
      slice = "";
      bytes = 0;
    }
    slice += char;
    bytes += size;
  }
  if (slice) yield slice;
}

export function countTokens(text: string): number {
  if (text.length === 0) return 0;
  const cached = cache.get(text);
  if (cached !== undefined) return cached;
  const count = encode(text).length;
  if (text.length <= CACHE_MAX_TEXT_LENGTH) {
    if (cache.size >= CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
    cache.set(text, count);
  }
  return count;
}

/** Tokens of a chat request's messages as the provider bills them (content, roles, overhead). */
export function countChatTokens(turns: readonly Pick<ChatTurn, "role" | "content">[]): number {
  let total = TOKENS_PER_REPLY;
  for (const turn of turns) total += TOKENS_PER_MESSAGE + countTokens(turn.role) + countTokens(turn.content);
  return total;
}

/** The longest prefix of `text` that is at most `maxTokens` tokens. */
export function truncateToTokens(text: string, maxTokens: number): string {
  if (maxTokens <= 0) return "";
  // A token is at least one UTF-8 byte: a text this short cannot be over the limit.
  if (Buffer.byteLength(text) <= maxTokens) return text;
  // A text that fits (the usual case: the same instructions and summary on every send) is counted
  // once and remembered, not encoded again on every call.
  if (text.length <= CACHE_MAX_TEXT_LENGTH && countTokens(text) <= maxTokens) return text;
  const tokens = encode(text);
  if (tokens.length <= maxTokens) return text;
  // A cut inside a multi-byte character decodes to U+FFFD: drop that partial character.
  return getEncoding().decode(tokens.slice(0, maxTokens)).replace(/(?<!\uFFFD)\uFFFD+$/u, "");
}

/** The encodings a model family may have (server/toolkit/models/entries.ts `Tokenizer`): `approximate` counts as o200k_base. */
export type TokenEncoding = "o200k_base" | "cl100k_base" | "approximate";

type Cl100k = typeof import("gpt-tokenizer/encoding/cl100k_base");
let cl100k: Cl100k | undefined;

/** cl100k_base (GPT-4, GPT-3.5), loaded on its first use: only a model of that family needs it. */
function cl100kCount(text: string): number {
  if (!cl100k) cl100k = createRequire(import.meta.url)("gpt-tokenizer/encoding/cl100k_base") as Cl100k;
  return cl100k.encode(text, { disallowedSpecial: new Set<string>() }).length;
}

/**
 * Tokens of `text` in the model family's encoding: the counts the service reports and bills itself
 * (a stopped reply, a provider that reports no usage) (docs/adr/0362).
 */
export function countTokensAs(encoding: TokenEncoding, text: string): number {
  if (encoding !== "cl100k_base" || text.length === 0) return countTokens(text);
  return cl100kCount(text);
}

/** `countChatTokens` in the model family's encoding. */
export function countChatTokensAs(encoding: TokenEncoding, turns: readonly Pick<ChatTurn, "role" | "content">[]): number {
  if (encoding !== "cl100k_base") return countChatTokens(turns);
  let total = TOKENS_PER_REPLY;
  for (const turn of turns) total += TOKENS_PER_MESSAGE + cl100kCount(turn.role) + cl100kCount(turn.content);
  return total;
}
