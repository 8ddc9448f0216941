import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CHUNK_TOKENS, chunksOf, chunkText } from "../../server/areas/knowledge/chunk.ts";
import { paragraphsOf, sentencesOf, wordsOf } from "../../server/areas/knowledge/text-scan.ts";
import { countTokens } from "../../server/toolkit/providers/llm/tokens.ts";
import { referenceChunkText } from "./reference-chunker.ts";

// Issue 31 H1: the chunker is linear in its input. A .txt of "Start " + 60,000 spaces + " end" held
// the API's event loop for 3 to 7 s (the sentence expression was quadratic in a run of spaces or
// tabs); 10 MB would have held it for hours. These inputs finish only if the chunker is linear.
const MB = 1024 * 1024;
const TEN_MB = 10 * MB;

describe("a hostile text (issue 31 H1)", () => {
  it("chunks a run of 10 MB of spaces between two words into one chunk of the two words", () => {
    const text = `Start ${" ".repeat(TEN_MB - "Start  end".length)} end`;
    expect(chunkText(text)).toEqual([{ content: "Start end", tokens: 2 }]);
  });

  it("chunks runs of 10 MB of tabs, of newlines, of blank lines, of spaces after a sentence end", () => {
    expect(chunkText(`Start ${"\t".repeat(TEN_MB)} end`)).toEqual([{ content: "Start end", tokens: 2 }]);
    expect(chunkText(`Start${"\n".repeat(TEN_MB)}end`)).toEqual([{ content: "Start\n\nend", tokens: 2 }]);
    expect(chunkText(`Start${"\n \t".repeat(TEN_MB / 3)}end`)).toEqual([{ content: "Start\n\nend", tokens: 2 }]);
    expect(chunkText(`It starts.${" ".repeat(TEN_MB)}It ends.`)).toEqual([{ content: "It starts. It ends.", tokens: countTokens("It starts.") + countTokens("It ends.") }]);
  });

  it("makes chunks of 10 MB of `a `, of `. `, of one word, as they are asked for", () => {
    for (const text of ["a ".repeat(TEN_MB / 2), ". ".repeat(TEN_MB / 2), "a".repeat(TEN_MB), "漢".repeat(TEN_MB / 3)]) {
      const chunks: { content: string; tokens: number }[] = [];
      for (const chunk of chunksOf(text)) {
        chunks.push(chunk);
        if (chunks.length === 50) break;
      }
      expect(chunks).toHaveLength(50);
      for (const chunk of chunks) {
        expect(chunk.tokens).toBeGreaterThanOrEqual(CHUNK_TOKENS / 4);
        expect(chunk.tokens).toBeLessThanOrEqual(CHUNK_TOKENS);
        expect(chunk.content.trim()).toBe(chunk.content);
      }
    }
  });

  it("never makes a chunk of white space alone", () => {
    const text = `a${" ".repeat(3 * MB)}b${"\t".repeat(MB)}\nc`;
    const chunks = chunkText(text);
    expect(chunks.map((chunk) => chunk.content)).toEqual(["a b\nc"]);
  });

  it("relies on at least one token per 64 characters, which lets it skip counting a long sentence", () => {
    // chunk.ts cuts a sentence over 64 × CHUNK_TOKENS characters without counting it whole.
    for (const text of [" ".repeat(64_000), "=".repeat(64_000), "-".repeat(64_000), "a".repeat(64_000), "ab ".repeat(21_000)]) {
      expect(countTokens(text)).toBeGreaterThanOrEqual(text.length / 64);
    }
  });
});

// Ordinary text: runs of white space short enough for the expressions the scanners replace.
const ALPHABET = ["word", "Word", "a", ".", "!", "?", "…", "。", " ", " ", "  ", "\t", "\n", "\n\n", "\n \n", " \n", "\u00a0", "\v", "\r"];
const ordinary = fc.array(fc.constantFrom(...ALPHABET), { maxLength: 200 }).map((parts) => parts.join(""));

describe("the scanners cut where the expressions they replace cut", () => {
  it("paragraphs: split(/\\n[ \\t]*\\n\\s*/), trimmed, empty ones dropped", () => {
    fc.assert(
      fc.property(ordinary, (text) => {
        expect([...paragraphsOf(text)]).toEqual(text.split(/\n[ \t]*\n\s*/).map((p) => p.trim()).filter(Boolean));
      }),
      { numRuns: 3000 },
    );
  });

  it("sentences: at /(?<=[.!?…。！？])[ \\t]+|[ \\t]*\\n[ \\t]*/g", () => {
    fc.assert(
      fc.property(ordinary, (text) => {
        const expected: { text: string; after: string }[] = [];
        let last = 0;
        for (const match of text.matchAll(/(?<=[.!?…。！？])[ \t]+|[ \t]*\n[ \t]*/g)) {
          expected.push({ text: text.slice(last, match.index), after: match[0].includes("\n") ? "\n" : " " });
          last = match.index + match[0].length;
        }
        expected.push({ text: text.slice(last), after: " " });
        expect([...sentencesOf(text)]).toEqual(expected);
      }),
      { numRuns: 3000 },
    );
  });

  it("words: split(/(?<=\\s)/)", () => {
    fc.assert(
      fc.property(ordinary, (text) => {
        expect([...wordsOf(text)]).toEqual(text ? text.split(/(?<=\s)/) : []);
      }),
      { numRuns: 3000 },
    );
  });
});

describe("ordinary text is chunked as before issue 31", () => {
  // Words with one space or tab between them; any run of white space after a sentence's end.
  const sentence = (maxWords: number) =>
    fc
      .array(fc.constantFrom("the", "granary", "wall", "north", "ledger", "1848", "mill-race", "Ada's", "漢字", "naïve", "x=1;"), { minLength: 1, maxLength: maxWords })
      .chain((words) => fc.tuple(fc.constant(words), fc.array(fc.constantFrom(" ", "\t"), { minLength: words.length, maxLength: words.length })))
      .map(([words, gaps]) => words.map((word, i) => (i === 0 ? word : gaps[i]! + word)).join(""));
  const ending = fc.constantFrom(". ", "! ", "? ", "… ", "。", ".  ", ".\t", "\n", ". \n", ".\n\n", "\n \n", "\n\n\n", "; ");
  const document = (maxWords: number, maxSentences: number) =>
    fc.array(fc.tuple(sentence(maxWords), ending), { minLength: 1, maxLength: maxSentences }).map((parts) => parts.map(([s, e]) => s + e).join(""));

  it("makes the same chunks, contents and token counts", () => {
    fc.assert(
      fc.property(document(40, 150), (text) => {
        expect(chunkText(text)).toEqual(referenceChunkText(text));
      }),
      { numRuns: 300 },
    );
  });

  it("makes the same chunks of sentences longer than a chunk", () => {
    fc.assert(
      fc.property(document(1500, 6), (text) => {
        expect(chunkText(text)).toEqual(referenceChunkText(text));
      }),
      { numRuns: 30 },
    );
  });

  it("makes the same chunks of a long run-on sentence and of a long word", () => {
    const runOn = Array.from({ length: 3000 }, (_, i) => `word${i}`).join(" ");
    expect(chunkText(runOn)).toEqual(referenceChunkText(runOn));
    const blob = `Header.\n${"QUJDRA".repeat(4000)}\nFooter.`;
    expect(chunkText(blob)).toEqual(referenceChunkText(blob));
  });
});
