import { countTokens } from "../../toolkit/providers/llm/tokens.ts";
import { paragraphsOf, sentencesOf, wordsOf } from "./text-scan.ts";

/** DECISIONS.md: chunks of about 800 tokens, consecutive chunks sharing about 200. */
export const CHUNK_TOKENS = 800;
export const OVERLAP_TOKENS = 200;

// countTokens encodes a pre-token piece longer than 64 UTF-8 bytes in slices of at most 64 bytes
// (server/toolkit/providers/llm/tokens.ts), so every 64 characters of text are at least one token. A
// sentence this long is over a chunk for sure: it is cut at once instead of being counted whole
// (issue 31 H1: counting a 10 MB sentence only to learn that it must be cut).
const CERTAINLY_OVER_A_CHUNK = 64 * CHUNK_TOKENS;

export interface Chunk {
  content: string;
  tokens: number;
}

/** A packing unit: a sentence (or line), with the separator that preceded it in the text. */
interface Segment {
  text: string;
  tokens: number;
  separator: string;
}

interface Piece {
  text: string;
  tokens: number;
}

/**
 * Splits a piece longer than a chunk (a run-on sentence, a minified line) at word boundaries. A
 * piece of nothing but white space is dropped (issue 31 H1: a run of a million spaces is no text).
 */
function* splitLong(text: string, limit: number): Generator<Piece> {
  let current = "";
  let tokens = 0;
  const flush = (): Piece | undefined => {
    const trimmed = current.trim();
    if (!trimmed) return undefined;
    // Trimming more than the one separator that ends a word removed a run of white space whose
    // tokens are no longer in the text: count what is left.
    return { text: trimmed, tokens: current.length - trimmed.length > 1 ? countTokens(trimmed) : tokens };
  };
  for (const word of longWordsCut(wordsOf(text))) {
    const wordTokens = countTokens(word);
    if (current && tokens + wordTokens > limit) {
      const piece = flush();
      if (piece) yield piece;
      current = "";
      tokens = 0;
    }
    if (wordTokens > limit) {
      // One "word" longer than a chunk (base64, a URL list without spaces): cut by characters.
      const step = Math.max(1, Math.floor((word.length * limit) / wordTokens));
      for (let i = 0; i < word.length; i += step) {
        const part = word.slice(i, i + step);
        if (part.trim()) yield { text: part, tokens: countTokens(part) };
      }
      continue;
    }
    current += word;
    tokens += wordTokens;
  }
  const piece = flush();
  if (piece) yield piece;
}

/**
 * The words, with any word longer than `CERTAINLY_OVER_A_CHUNK` characters in pieces of that length:
 * a word is counted whole to cut it evenly, and a 10 MB word (no white space at all) would be
 * counted whole (issue 31 H1: token counting bounded like the rest).
 */
function* longWordsCut(words: Iterable<string>): Generator<string> {
  for (const word of words) {
    if (word.length <= CERTAINLY_OVER_A_CHUNK) yield word;
    else for (let at = 0; at < word.length; at += CERTAINLY_OVER_A_CHUNK) yield word.slice(at, at + CERTAINLY_OVER_A_CHUNK);
  }
}

/** The packing units of one paragraph, made as they are asked for. */
function* segmentsOf(paragraph: string): Generator<Segment> {
  let separator = "\n\n";
  for (const sentence of sentencesOf(paragraph)) {
    if (!sentence.text) continue;
    const long = sentence.text.length > CERTAINLY_OVER_A_CHUNK;
    const tokens = long ? Infinity : countTokens(sentence.text);
    const parts = tokens > CHUNK_TOKENS ? splitLong(sentence.text, CHUNK_TOKENS - OVERLAP_TOKENS) : [{ text: sentence.text, tokens }];
    for (const part of parts) {
      yield { text: part.text, tokens: part.tokens, separator };
      separator = " ";
    }
    separator = sentence.after;
  }
}

/**
 * A paragraph's segments, and its tokens as far as a chunk decision needs them: the exact total
 * when the paragraph fits in a chunk, else a count already over `CHUNK_TOKENS`. Only that much is
 * read ahead, so one paragraph of megabytes is never held whole.
 */
function paragraphSegments(paragraph: string): { segments: Iterable<Segment>; total: number } {
  const iterator = segmentsOf(paragraph);
  const ahead: Segment[] = [];
  let total = 0;
  for (;;) {
    if (total > CHUNK_TOKENS) return { segments: rest(ahead, iterator), total };
    const next = iterator.next();
    if (next.done) return { segments: ahead, total };
    ahead.push(next.value);
    total += next.value.tokens;
  }
}

function* rest(ahead: Segment[], iterator: Iterator<Segment>): Generator<Segment> {
  yield* ahead;
  for (let next = iterator.next(); !next.done; next = iterator.next()) yield next.value;
}

const joined = (segments: Segment[]) => segments.map((s, i) => (i === 0 ? s.text : s.separator + s.text)).join("");

/**
 * The chunks of `text`, in order, made as they are asked for: a caller that stops early (the
 * per-document chunk limit) leaves the rest of the text unread. Chunks are of about
 * `CHUNK_TOKENS` tokens, each beginning with the last `OVERLAP_TOKENS` or so of the one before
 * (whole sentences). Chunks end on sentence boundaries, and on a paragraph boundary when the next
 * paragraph would not fit whole and the chunk is already at least half full; only a sentence
 * longer than a chunk is cut inside, at a word boundary. Linear in the text (issue 31 H1).
 */
export function* chunksOf(text: string): Generator<Chunk> {
  let current: Segment[] = [];
  let tokens = 0;
  let paragraphIndex = -1;
  // The paragraph of the last segment in `current`.
  let currentParagraph = -1;
  for (const paragraph of paragraphsOf(text)) {
    paragraphIndex++;
    const { segments, total } = paragraphSegments(paragraph);
    for (const segment of segments) {
      if (current.length > 0) {
        const startsParagraph = paragraphIndex !== currentParagraph;
        const full = tokens + segment.tokens > CHUNK_TOKENS;
        const paragraphBreak = startsParagraph && tokens >= CHUNK_TOKENS / 2 && tokens + total > CHUNK_TOKENS;
        if (full || paragraphBreak) {
          yield { content: joined(current), tokens };
          const kept: Segment[] = [];
          let keptTokens = 0;
          for (let i = current.length - 1; i >= 0; i--) {
            const next = keptTokens + current[i]!.tokens;
            if (next > OVERLAP_TOKENS || next + segment.tokens > CHUNK_TOKENS) break;
            kept.unshift(current[i]!);
            keptTokens = next;
          }
          current = kept;
          tokens = keptTokens;
        }
      }
      current.push(segment);
      tokens += segment.tokens;
      currentParagraph = paragraphIndex;
    }
  }
  if (current.length > 0) yield { content: joined(current), tokens };
}

/** Every chunk of `text` (see `chunksOf`). */
export function chunkText(text: string): Chunk[] {
  return [...chunksOf(text)];
}
