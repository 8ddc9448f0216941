import { createRequire } from "node:module";
import { Tiktoken, type TiktokenBPE } from "js-tiktoken/lite";
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

interface Encoding {
  tiktoken: Tiktoken;
  /** js-tiktoken's own table: a token's UTF-8 bytes joined by commas → its rank (= its id). */
  ranks: Map<string, number>;
  /** The encoding's pre-tokenizer: words, numbers, punctuation and spaces become separate pieces. */
  pieces: RegExp;
}

let encoding: Encoding | undefined;

/** Built on first use: parsing the 2 MB rank file takes a moment that startup should not pay. */
function getEncoding(): Encoding {
  if (!encoding) {
    const require = createRequire(import.meta.url);
    const bpe = require("js-tiktoken/ranks/o200k_base") as TiktokenBPE;
    const tiktoken = new Tiktoken(bpe);
    // Not in js-tiktoken's types; the version is pinned, and this fails loudly if it ever moves.
    const ranks = (tiktoken as unknown as { rankMap?: unknown }).rankMap;
    if (!(ranks instanceof Map)) throw new Error("js-tiktoken no longer exposes its rank map: see server/providers/llm/tokens.ts");
    encoding = { tiktoken, ranks: ranks as Map<string, number>, pieces: new RegExp(bpe.pat_str, "gu") };
  }
  return encoding;
}

/** Loads the tokenizer now (a second or two) so that the first chat request does not wait for it. */
export function warmUpTokenizer(): void {
  getEncoding();
}

// The merge below is quadratic in a piece's length, and a piece can be a whole paragraph (Chinese
// has no spaces; a pasted blob has none either). Longer pieces are merged in slices of this many
// bytes, which changes the count by at most a token a slice.
const MAX_PIECE_BYTES = 64;
const utf8 = new TextEncoder();

/**
 * The o200k_base token ids of `text`, as js-tiktoken's `encode` returns them. Our own loop because
 * js-tiktoken's merge rebuilds every pair's key on each step (a 30,000-letter word took minutes);
 * this one ranks each pair once and re-ranks only the two neighbours of a merge. Special-token text
 * such as `<|endoftext|>` is ordinary user text here, never an error.
 */
function encode(text: string): number[] {
  const { ranks, pieces } = getEncoding();
  const tokens: number[] = [];
  for (const match of text.matchAll(pieces)) {
    const bytes = utf8.encode(match[0]);
    const whole = ranks.get(bytes.join(","));
    if (whole !== undefined) {
      tokens.push(whole);
      continue;
    }
    for (let start = 0; start < bytes.length; start += MAX_PIECE_BYTES) {
      for (const token of bytePairEncode(bytes.subarray(start, start + MAX_PIECE_BYTES), ranks)) tokens.push(token);
    }
  }
  return tokens;
}

/** Byte-pair merging as tiktoken does it: repeatedly merge the adjacent pair of lowest rank. */
function bytePairEncode(bytes: Uint8Array, ranks: Map<string, number>): number[] {
  // Each part's key (its bytes joined by commas): a merged pair's key is the two joined by a comma.
  const parts = Array.from(bytes, String);
  const pairRank = (i: number): number => (i + 1 < parts.length ? (ranks.get(`${parts[i]},${parts[i + 1]}`) ?? Infinity) : Infinity);
  // pairRanks[i] ranks merging part i with part i + 1.
  const pairRanks = parts.map((_, i) => pairRank(i));
  for (;;) {
    let best = -1;
    let bestRank = Infinity;
    for (let i = 0; i < pairRanks.length - 1; i++) {
      if (pairRanks[i]! < bestRank) {
        bestRank = pairRanks[i]!;
        best = i;
      }
    }
    if (best < 0) break;
    parts.splice(best, 2, `${parts[best]},${parts[best + 1]}`);
    pairRanks.splice(best + 1, 1);
    pairRanks[best] = pairRank(best);
    if (best > 0) pairRanks[best - 1] = pairRank(best - 1);
  }
  return parts.map((part) => ranks.get(part)!);
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
  const tokens = encode(text);
  if (tokens.length <= maxTokens) return text;
  // A cut inside a multi-byte character decodes to U+FFFD: drop that partial character.
  return getEncoding().tiktoken.decode(tokens.slice(0, maxTokens)).replace(/\uFFFD+$/u, "");
}
