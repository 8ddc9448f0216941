import { threadId as testThreadId } from "node:worker_threads";
import { PDFDocument, StandardFonts } from "pdf-lib";
import { describe, expect, it } from "vitest";
import { MAX_CHUNKS, MAX_CSV_NAMED_COLUMNS, MAX_JSON_DEPTH, MAX_JSON_VALUES } from "../../server/areas/knowledge/limits.ts";
import { extractText } from "../../server/areas/knowledge/extract.ts";
import { ExtractionError } from "../../server/areas/knowledge/extracted.ts";
import { checkContentInThread, chunkDocumentInThread, PROCESS_LIMITS, ThreadFailure } from "../../server/areas/knowledge/threads.ts";

// Issue 31 H1/M7/M8: an upload's content check and a document's reading and chunking run in worker
// threads with a heap limit, a time limit and per-document caps; what goes wrong there fails the
// document with a reason and never this process.
const MB = 1024 * 1024;
const bytes = (text: string) => new TextEncoder().encode(text);

describe("where the work runs", () => {
  it("chunks a document in a worker thread, never on the caller's thread", async () => {
    const result = await chunkDocumentInThread("txt", bytes(`Start ${" ".repeat(MB)} end`));
    expect(result.chunks).toEqual([{ content: "Start end", tokens: 2 }]);
    expect(result.truncation).toBeNull();
    expect(result.threadId).toBeGreaterThan(0);
    expect(result.threadId).not.toBe(testThreadId);
  });

  it("checks an upload's content in a worker thread", async () => {
    const check = await checkContentInThread("csv", bytes('name\n"open'));
    expect(check.problem).toEqual({ problem: "unsupported", message: expect.stringContaining("Unterminated quoted field") });
    expect(check.threadId).toBeGreaterThan(0);
    expect(check.threadId).not.toBe(testThreadId);
    expect((await checkContentInThread("json", bytes('{"a": [1]}'))).problem).toBeUndefined();
    expect((await checkContentInThread("txt", bytes(" \n\t "))).problem).toEqual({ problem: "empty", message: expect.any(String) });
  });

  it("reads PDFs only there: on the API's thread a PDF is refused", async () => {
    await expect(extractText("pdf", bytes("%PDF-1.7\n"))).rejects.toThrow(/only in the knowledge worker thread/);
  });

  it("fails a PDF that cannot be read with the reason", async () => {
    await expect(chunkDocumentInThread("pdf", bytes("%PDF-1.7\ngarbage"))).rejects.toThrow(ExtractionError);
  });
});

describe("per-document caps (issue 31 M8)", () => {
  it("keeps the first 2,000 chunks of a 1 MB `a,a,a,…` CSV and says so", async () => {
    const result = await chunkDocumentInThread("csv", bytes("a,".repeat(MB / 2)));
    expect(MAX_CHUNKS).toBe(2000);
    expect(result.chunks).toHaveLength(MAX_CHUNKS);
    expect(result.truncation).toBe("Only the first 2000 chunks were indexed (the limit per document); the rest of the text was left out");
  });

  it("cuts the text a CSV or JSON file expands into at the text cap, and says so", async () => {
    const limits = { ...PROCESS_LIMITS, maxTextChars: 1000 };
    const csv = await chunkDocumentInThread("csv", bytes(`name,role\n${"Ada,navigator\n".repeat(10_000)}`), limits);
    expect(csv.chunks.map((chunk) => chunk.content).join("").length).toBeLessThanOrEqual(1000);
    expect(csv.truncation).toBe("Only the first 1000 characters of the document's text were indexed (the limit per document)");
    const json = await chunkDocumentInThread("json", bytes(JSON.stringify(Array.from({ length: 10_000 }, (_, i) => ({ i })))), limits);
    expect(json.truncation).toMatch(/first 1000 characters/);
    const whole = await chunkDocumentInThread("csv", bytes("name,role\nAda,navigator\n"), limits);
    expect(whole.truncation).toBeNull();
  });

  it("refuses JSON nested deeper than the limit, or of more values, at the check and when processing", async () => {
    const deep = bytes(`${"[".repeat(MAX_JSON_DEPTH + 1)}${"]".repeat(MAX_JSON_DEPTH + 1)}`);
    expect((await checkContentInThread("json", deep)).problem?.message).toBe("The file's JSON nests objects and arrays more than 128 levels deep, over a document's limit");
    await expect(chunkDocumentInThread("json", deep)).rejects.toThrow("The file could not be read as .json: its JSON nests objects and arrays more than 128 levels deep");
    const justDeepEnough = bytes(`${"[".repeat(MAX_JSON_DEPTH)}1${"]".repeat(MAX_JSON_DEPTH)}`);
    expect((await checkContentInThread("json", justDeepEnough)).problem).toBeUndefined();

    const values = (count: number) => bytes(`[${Array.from({ length: count }, () => "{}").join(",")}]`);
    // The array and its elements: MAX_JSON_VALUES in all is within the limit, one more is not.
    expect((await checkContentInThread("json", values(MAX_JSON_VALUES - 1))).problem).toBeUndefined();
    expect((await checkContentInThread("json", values(MAX_JSON_VALUES))).problem?.message).toBe("The file's JSON holds more than 1000000 values, over a document's limit");
    await expect(chunkDocumentInThread("json", values(MAX_JSON_VALUES))).rejects.toThrow(/holds more than 1000000 values/);
  });

  it("reads the first pages of a PDF up to the page limit, and says so", async () => {
    const pdf = await PDFDocument.create();
    const font = await pdf.embedFont(StandardFonts.Helvetica);
    for (const text of ["Page one.", "Page two.", "Page three."]) pdf.addPage().drawText(text, { x: 40, y: 780, size: 12, font });
    const bytesOf = async () => pdf.save();
    const cut = await chunkDocumentInThread("pdf", await bytesOf(), { ...PROCESS_LIMITS, maxPdfPages: 2 });
    expect(cut.chunks.map((chunk) => chunk.content)).toEqual(["Page one.\n\nPage two."]);
    expect(cut.truncation).toBe("Only the first 2 pages of the PDF were read (the limit per document)");
    const whole = await chunkDocumentInThread("pdf", await bytesOf(), { ...PROCESS_LIMITS, maxPdfPages: 3 });
    expect(whole.truncation).toBeNull();
  });

  it("names the first 10,000 columns of a CSV by its header, the others by number", async () => {
    const header = Array.from({ length: MAX_CSV_NAMED_COLUMNS + 2 }, (_, i) => `h${i}`).join(",");
    const row = Array.from({ length: MAX_CSV_NAMED_COLUMNS + 2 }, (_, i) => (i < MAX_CSV_NAMED_COLUMNS - 1 ? "" : `v${i}`)).join(",");
    const { chunks } = await chunkDocumentInThread("csv", bytes(`${header}\n${row}\n`));
    expect(chunks.map((chunk) => chunk.content).join("")).toBe(`h9999: v9999\ncolumn 10001: v10000\ncolumn 10002: v10001`);
  });
});

describe("a thread that runs out of memory or time", () => {
  it("fails the document with the memory limit named, and this process goes on", async () => {
    // The tokenizer alone needs more than 16 MB of heap.
    const failure = chunkDocumentInThread("txt", bytes("Enough words to need the tokenizer."), { ...PROCESS_LIMITS, heapMb: 16 });
    await expect(failure).rejects.toThrow(ThreadFailure);
    await expect(failure).rejects.toThrow("Reading the document needed more than 16 MB of memory (the limit per document)");
    expect((await chunkDocumentInThread("txt", bytes("Still here."))).chunks).toEqual([{ content: "Still here.", tokens: 3 }]);
  });

  it("fails the document with the time limit named", async () => {
    const failure = chunkDocumentInThread("txt", bytes("x ".repeat(MB)), { ...PROCESS_LIMITS, timeoutMs: 1 });
    await expect(failure).rejects.toThrow("Reading the document took longer than 0.001 s (the limit per document)");
    expect((await chunkDocumentInThread("txt", bytes("Still here."))).chunks).toHaveLength(1);
  });
});
