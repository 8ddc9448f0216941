import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_DOCUMENT_BYTES } from "../../server/areas/knowledge/files.ts";
import { processDocument } from "../../server/areas/knowledge/jobs.ts";
import { expectError, expectOk } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { chunkCount, detail, insertPersona, listDocuments, pdfBomb, upload, uploaded } from "./helpers.ts";

// Issue 31 H1/M7/M8 through the API, on the database under test: hostile documents end ready within
// the per-document caps (and say so) or failed with the reason, and the work ran in a worker thread.
// No worker runs: the tests call the processing job themselves, so that nothing races them.
const MB = 1024 * 1024;
let service: TestService;
let alice: TestUser;
let personaId: string;
let logText = "";

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logText += String(chunk);
      done();
    },
  });
  service = await startTestService({ env: { WORKER_ENABLED: "false", LLM_PROVIDER: "local", EMBEDDINGS_PROVIDER: "local" }, log: pino({ level: "info" }, sink) });
  alice = await registerUser(service);
  await service.services.db.knex("users").where({ id: alice.id }).update({ plan: "creator" });
  personaId = await insertPersona(service, alice);
});

afterAll(async () => {
  await service?.close();
});

/** The "knowledge document ready" log line of a document. */
function readyLine(documentId: string): { thread: number; truncated: boolean; chunks: number } | undefined {
  return logText
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { msg?: string; documentId?: string; thread: number; truncated: boolean; chunks: number })
    .find((line) => line.msg === "knowledge document ready" && line.documentId === documentId);
}

describe("hostile documents (issue 31)", () => {
  it("H1: a 10 MB .txt of one run of spaces is one chunk of its two words, chunked in a worker thread", async () => {
    const text = `Start ${" ".repeat(MAX_DOCUMENT_BYTES - "Start  end".length)} end`;
    const { id } = await uploaded(service, alice, personaId, "spaces.txt", text);
    expect(await processDocument(service.services, id)).toBe("ready");
    expect(await detail(service, alice, personaId, id)).toMatchObject({ status: "ready", chunk_count: 1, truncated: false, truncation: null, error: null });
    const chunks = await service.services.db.knex("knowledge_chunks").where({ document_id: id }).select("content", "token_count");
    expect(chunks).toEqual([{ content: "Start end", token_count: 2 }]);
    const line = readyLine(id);
    expect(line).toMatchObject({ chunks: 1, truncated: false });
    // The API's own thread is 0: the chunking ran elsewhere.
    expect(line!.thread).toBeGreaterThan(0);
  });

  it("M7: a 399 kB PDF inflating to 400 MB ends failed, naming the limit, with no chunks", async () => {
    const { id } = await uploaded(service, alice, personaId, "bomb.pdf", await pdfBomb(400 * MB));
    expect(await processDocument(service.services, id)).toBe("failed");
    const failed = await detail(service, alice, personaId, id);
    expect(failed).toMatchObject({ status: "failed", chunk_count: null, truncated: false, truncation: null });
    expect(failed.error).toBe("A stream of the PDF decodes to more than 33554432 bytes (the limit per stream); the file is refused as a decompression bomb");
    expect(await chunkCount(service, id)).toBe(0);
  });

  // Indexing 2,000 vectors is 12 s of the embedded database's CPU on a quiet 2-core machine (its
  // HNSW inserts), several times that beside other work: the outcome does not depend on how long it
  // takes, so the watchdog is set far past it (a loaded run took over 60 s).
  it("M8: a 1 MB `a,a,a,…` CSV keeps its first 2,000 chunks, and the document says so", { timeout: 300_000 }, async () => {
    const { id } = await uploaded(service, alice, personaId, "wide.csv", "a,".repeat(MB / 2));
    expect(await processDocument(service.services, id)).toBe("ready");
    const done = await detail(service, alice, personaId, id);
    expect(done).toMatchObject({
      status: "ready",
      chunk_count: 2000,
      truncated: true,
      truncation: "Only the first 2000 chunks were indexed (the limit per document); the rest of the text was left out",
    });
    expect(await chunkCount(service, id)).toBe(2000);
    const listed = await expectOk(listDocuments(service, alice, personaId, { limit: 100 }));
    expect(listed.data.find((doc) => doc.id === id)).toMatchObject({ truncated: true, chunk_count: 2000 });
    expect(readyLine(id)).toMatchObject({ chunks: 2000, truncated: true });
  });

  it("refuses JSON nested deeper than 128 levels, or of more than a million values, at upload with 415 naming the limit", async () => {
    const deep = await expectError(await upload(service, alice, personaId, "deep.json", `${"[".repeat(5 * MB)}${"]".repeat(5 * MB)}`), 415, "unsupported_media_type");
    expect(deep.error.message).toBe("The file's JSON nests objects and arrays more than 128 levels deep, over a document's limit");
    // 10 MB of `{},` would parse into 3.5 million objects.
    const wide = await expectError(await upload(service, alice, personaId, "wide.json", `[${"{},".repeat(Math.floor(MAX_DOCUMENT_BYTES / 3) - 1)}{}]`), 415, "unsupported_media_type");
    expect(wide.error.message).toBe("The file's JSON holds more than 1000000 values, over a document's limit");
  });
});
