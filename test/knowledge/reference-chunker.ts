// The chunker as it was before issue 31 (server/areas/knowledge/chunk.ts at 0900e33), kept to check that
// the linear chunker cuts ordinary text exactly as it did. Its sentence expression is quadratic in a
// run of spaces: feed it only short runs.
import { countTokens } from "../../server/toolkit/providers/llm/tokens.ts";

/** DECISIONS.md: chunks of about 800 tokens, consecutive chunks sharing about 200. */
const CHUNK_TOKENS = 800;
const OVERLAP_TOKENS = 200;

export interface Chunk {
  content: string;
  tokens: number;
}

/** A packing unit: a sentence (or line), with the separator that preceded it in the text. */
interface Segment {
  text: string;
  tokens: number;
  paragraph: number;
  separator: string;
}

// A sentence ends at . ! ? … (or their CJK forms) before whitespace; a line break always ends one.
const SENTENCE_END = /(?<=[.!?…。！？])[ \t]+|[ \t]*\n[ \t]*/g;

/** Splits a piece longer than a chunk (a run-on sentence, a minified line) at word boundaries. */
function splitLong(text: string, limit: number): { text: string; tokens: number }[] {
  const pieces: { text: string; tokens: number }[] = [];
  let current = "";
  let tokens = 0;
  for (const word of text.split(/(?<=\s)/)) {
    const wordTokens = countTokens(word);
    if (current && tokens + wordTokens > limit) {
      pieces.push({ text: current.trim(), tokens });
      current = "";
      tokens = 0;
    }
    if (wordTokens > limit) {
      // One "word" longer than a chunk (base64, a URL list without spaces): cut by characters.
      const step = Math.max(1, Math.floor((word.length * limit) / wordTokens));
      for (let i = 0; i < word.length; i += step) {
        const part = word.slice(i, i + step);
        pieces.push({ text: part, tokens: countTokens(part) });
      }
      continue;
    }
    current += word;
    tokens += wordTokens;
  }
  if (current.trim()) pieces.push({ text: current.trim(), tokens });
  return pieces;
}

function segmentsOf(text: string): { segments: Segment[]; paragraphTokens: number[] } {
  const segments: Segment[] = [];
  const paragraphTokens: number[] = [];
  const paragraphs = text.split(/\n[ \t]*\n\s*/).map((p) => p.trim()).filter(Boolean);
  paragraphs.forEach((paragraph, index) => {
    let total = 0;
    let separator = "\n\n";
    let last = 0;
    const pieces: { text: string; after: string }[] = [];
    for (const match of paragraph.matchAll(SENTENCE_END)) {
      pieces.push({ text: paragraph.slice(last, match.index), after: match[0].includes("\n") ? "\n" : " " });
      last = match.index + match[0].length;
    }
    pieces.push({ text: paragraph.slice(last), after: " " });
    for (const piece of pieces) {
      if (!piece.text) continue;
      const tokens = countTokens(piece.text);
      const parts = tokens > CHUNK_TOKENS ? splitLong(piece.text, CHUNK_TOKENS - OVERLAP_TOKENS) : [{ text: piece.text, tokens }];
      for (const part of parts) {
        segments.push({ text: part.text, tokens: part.tokens, paragraph: index, separator });
        total += part.tokens;
        separator = " ";
      }
      separator = piece.after;
    }
    paragraphTokens.push(total);
  });
  return { segments, paragraphTokens };
}

const joined = (segments: Segment[]) => segments.map((s, i) => (i === 0 ? s.text : s.separator + s.text)).join("");

/**
 * Splits text into chunks of about `CHUNK_TOKENS` tokens, each beginning with the last
 * `OVERLAP_TOKENS` or so of the one before (whole sentences). Chunks end on sentence boundaries, and
 * on a paragraph boundary when the next paragraph would not fit whole and the chunk is already at
 * least half full; only a sentence longer than a chunk is cut inside, at a word boundary.
 */
export function referenceChunkText(text: string): Chunk[] {
  const { segments, paragraphTokens } = segmentsOf(text);
  const chunks: Chunk[] = [];
  let current: Segment[] = [];
  let tokens = 0;
  for (const segment of segments) {
    if (current.length > 0) {
      const startsParagraph = segment.paragraph !== current[current.length - 1]!.paragraph;
      const full = tokens + segment.tokens > CHUNK_TOKENS;
      const paragraphBreak = startsParagraph && tokens >= CHUNK_TOKENS / 2 && tokens + paragraphTokens[segment.paragraph]! > CHUNK_TOKENS;
      if (full || paragraphBreak) {
        chunks.push({ content: joined(current), tokens });
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
  }
  if (current.length > 0) chunks.push({ content: joined(current), tokens });
  return chunks;
}
