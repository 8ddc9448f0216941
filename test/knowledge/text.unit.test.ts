import { describe, expect, it } from "vitest";
import { CHUNK_TOKENS, OVERLAP_TOKENS, chunkText } from "../../server/areas/knowledge/chunk.ts";
import { CsvError, parseCsv } from "../../server/areas/knowledge/csv.ts";
import { csvToText, extractText, ExtractionError, jsonToText } from "../../server/areas/knowledge/extract.ts";
import { checkUpload, cleanFilename, kindOfUpload } from "../../server/areas/knowledge/files.ts";
import { countTokens } from "../../server/toolkit/providers/llm/tokens.ts";

// Text extraction, CSV parsing and chunking: pure functions, no service.
const sentence = (p: number, s: number) => `In paragraph ${p}, sentence ${s} describes the ${["north", "south", "east", "west"][s % 4]} wall of the old granary in some detail.`;
const paragraph = (p: number, sentences: number) => Array.from({ length: sentences }, (_, s) => sentence(p, s)).join(" ");

describe("chunkText", () => {
  it("keeps a short text whole", () => {
    expect(chunkText("One paragraph.\n\nAnother one.")).toEqual([{ content: "One paragraph.\n\nAnother one.", tokens: expect.any(Number) }]);
  });

  it("makes chunks of at most about 800 tokens that overlap by at most about 200, on sentence boundaries", () => {
    const text = Array.from({ length: 40 }, (_, p) => paragraph(p, 9)).join("\n\n");
    const chunks = chunkText(text);
    expect(chunks.length).toBeGreaterThan(5);
    for (const [i, chunk] of chunks.entries()) {
      const tokens = countTokens(chunk.content);
      expect(tokens).toBeLessThanOrEqual(CHUNK_TOKENS + 10);
      if (i < chunks.length - 1) expect(tokens).toBeGreaterThan(CHUNK_TOKENS / 2);
      expect(chunk.content).toMatch(/^In paragraph \d+, sentence \d+/);
      expect(chunk.content).toMatch(/detail\.$/);
    }
    for (let i = 1; i < chunks.length; i++) {
      const previous = chunks[i - 1]!.content;
      const firstSentence = chunks[i]!.content.split(/(?<=\.)\s+/)[0]!;
      // The next chunk starts inside the previous one (the overlap), not after it.
      const overlapStart = previous.indexOf(firstSentence);
      if (overlapStart >= 0) {
        expect(countTokens(previous.slice(overlapStart))).toBeLessThanOrEqual(OVERLAP_TOKENS + 5);
        expect(countTokens(previous.slice(overlapStart))).toBeGreaterThan(OVERLAP_TOKENS / 2);
      } else {
        // A chunk that begins a paragraph break may start fresh only at a paragraph boundary.
        expect(previous.endsWith("detail.")).toBe(true);
      }
    }
    // Every sentence of the text is in some chunk.
    const all = chunks.map((c) => c.content).join("\n");
    for (let p = 0; p < 40; p += 7) expect(all).toContain(sentence(p, 8));
  });

  it("prefers to end a chunk at a paragraph boundary", () => {
    // Paragraphs of about 300 tokens: two fit in a chunk, the third would not.
    const paragraphs = Array.from({ length: 6 }, (_, p) => paragraph(p, 16));
    const chunks = chunkText(paragraphs.join("\n\n"));
    expect(chunks[0]!.content.endsWith(paragraphs[1]!)).toBe(true);
  });

  it("cuts a sentence longer than a chunk at word boundaries", () => {
    const runOn = Array.from({ length: 1500 }, (_, i) => `word${i}`).join(" ");
    const chunks = chunkText(runOn);
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) expect(countTokens(chunk.content)).toBeLessThanOrEqual(CHUNK_TOKENS + 10);
    expect(chunks.every((chunk) => /^word\d+/.test(chunk.content) && /word\d+$/.test(chunk.content))).toBe(true);
  });
});

describe("CSV", () => {
  it("parses quotes, escaped quotes, embedded commas and newlines, CRLF", () => {
    expect(parseCsv('a,b\r\n"x, y","say ""hi""\nthere"\r\n\r\n3,')).toEqual([["a", "b"], ["x, y", 'say "hi"\nthere'], ["3", ""]]);
  });

  it("refuses an unterminated quote and text after a closing quote", () => {
    expect(() => parseCsv('a\n"open')).toThrow(CsvError);
    expect(() => parseCsv('"a"b\n')).toThrow(CsvError);
  });

  it("becomes header: value lines, one paragraph per row, ragged rows included", () => {
    expect(csvToText("name,role\nAda,navigator,extra\nGrace,\n")).toEqual({ text: "name: Ada\nrole: navigator\ncolumn 3: extra\n\nname: Grace", cut: null });
  });
});

describe("JSON", () => {
  it("becomes key-path lines, one paragraph per top-level entry", () => {
    expect(jsonToText('{"a": {"b": [1, {"c": true}]}, "d": "text"}').text).toBe("a.b[0]: 1\na.b[1].c: true\n\nd: text");
    expect(jsonToText('[{"x": null}, "y"]').text).toBe("[0].x: null\n\n[1]: y");
    expect(jsonToText('"just a string"').text).toBe("just a string");
  });
});

describe("extractText", () => {
  it("fails a document without text", async () => {
    await expect(extractText("txt", new TextEncoder().encode("  \n "))).rejects.toThrow(ExtractionError);
  });

  it("drops a byte-order mark and normalises line ends", async () => {
    expect(await extractText("md", new TextEncoder().encode("\uFEFF# T\r\nline"))).toEqual({ text: "# T\nline", cut: null });
  });
});

describe("upload checks", () => {
  it("keeps the last path segment of a file name", () => {
    expect(cleanFilename("C:\\Users\\me\\notes.txt")).toBe("notes.txt");
    expect(cleanFilename("../../etc/passwd.md")).toBe("passwd.md");
    expect(cleanFilename("")).toBe("document");
  });

  it("finds the PDF header within the first kilobyte", async () => {
    expect(kindOfUpload("a.pdf", new TextEncoder().encode("\n\n%PDF-1.4"))).toBe("pdf");
    expect(await checkUpload("a.pdf", new TextEncoder().encode("\n\n%PDF-1.4"))).toBe("pdf");
  });
});
