import { PDFDocument, StandardFonts } from "pdf-lib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { retrieveForChat } from "../../server/areas/knowledge/retrieval.ts";
import { expectApiError, expectError, expectOk } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import {
  CORPUS,
  chunkCount,
  deleteDocument,
  detail,
  getDocument,
  insertPersona,
  listDocuments,
  query,
  ready,
  results,
  settled,
  upload,
  uploaded,
} from "./helpers.ts";

// Documents through the API with the worker running: processing, PDFs, deletion, the plan limit,
// concurrency, and what another user can and cannot reach.
let service: TestService;
let alice: TestUser;
let bob: TestUser;
let personaId: string;

beforeAll(async () => {
  service = await startTestService({ env: { LLM_PROVIDER: "local", EMBEDDINGS_PROVIDER: "local", RATE_LIMIT_PER_MINUTE: "100000" } });
  alice = await registerUser(service);
  bob = await registerUser(service);
  await service.services.db.knex("users").where({ id: alice.id }).update({ plan: "creator" });
  personaId = await insertPersona(service, alice);
});

afterAll(async () => {
  await service?.close();
});

async function pdfWith(lines: string[]): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  const page = pdf.addPage();
  lines.forEach((line, i) => page.drawText(line, { x: 40, y: 780 - i * 18, size: 12, font }));
  return pdf.save();
}

/** Paragraphs on one subject, long enough for several chunks. */
function longText(paragraphs: number): string {
  return Array.from({ length: paragraphs }, (_, p) =>
    Array.from({ length: 12 }, (_, s) => `Paragraph ${p} sentence ${s} tells how lighthouse keepers trimmed the lamp wick and wound the clockwork at dusk.`).join(" "),
  ).join("\n\n");
}

describe("upload and processing", () => {
  it("answers 202 processing, then the detail shows ready with chunk_count and timings", async () => {
    const text = longText(30);
    const body = await expectOk(upload(service, alice, personaId, "lighthouse.txt", text), 202);
    expect(body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      persona_id: personaId,
      filename: "lighthouse.txt",
      size_bytes: Buffer.byteLength(text),
      chunk_count: null,
      truncated: false,
      status: "processing",
      created_at: expect.any(String),
    });
    const done = await settled(service, alice, personaId, body.id);
    expect(done).toMatchObject({ status: "ready", error: null, truncated: false, truncation: null, filename: "lighthouse.txt", size_bytes: Buffer.byteLength(text) });
    expect(done.chunk_count).toBeGreaterThan(1);
    expect(await chunkCount(service, body.id)).toBe(done.chunk_count);
    const { started_at, completed_at, duration_ms } = done.processing;
    expect(started_at && completed_at).toBeTruthy();
    expect(Date.parse(completed_at!) - Date.parse(started_at!)).toBe(duration_ms);
    expect(Date.parse(started_at!)).toBeGreaterThanOrEqual(Date.parse(done.created_at));
    const indexes = await service.services.db.knex("knowledge_chunks").where({ document_id: body.id }).orderBy("chunk_index").pluck("chunk_index");
    expect(indexes).toEqual(Array.from({ length: done.chunk_count! }, (_, i) => i));
    // The bytes are kept only until the document is processed.
    expect(await service.services.db.knex("knowledge_files").where({ document_id: body.id }).first()).toBeUndefined();
  });

  it("reads the text of a PDF", async () => {
    const doc = await ready(service, alice, personaId, "ship-log.pdf", await pdfWith(["Ship log, day 12.", "The albatross followed the ship past Cape Horn."]));
    expect(doc.chunk_count).toBe(1);
    const found = await results(service, alice, personaId, "albatross near Cape Horn");
    expect(found[0]).toMatchObject({ document_id: doc.id, filename: "ship-log.pdf", chunk_index: 0 });
    expect(found[0]!.content).toContain("albatross followed the ship");
  });

  it("ends a corrupt PDF (valid header, broken body) failed with an error and no chunks", async () => {
    const good = Buffer.from(await pdfWith(["This text is lost."]));
    const corrupt = Buffer.concat([good.subarray(0, 16), Buffer.from("this is not a PDF object graph ".repeat(40)), Buffer.from([0xde, 0xad, 0xbe, 0xef])]);
    const { id } = await uploaded(service, alice, personaId, "broken.pdf", corrupt);
    const done = await settled(service, alice, personaId, id);
    expect(done.status).toBe("failed");
    expect(done.error).toEqual(expect.any(String));
    expect(done.error!.length).toBeGreaterThan(0);
    expect(done.chunk_count).toBeNull();
    expect(done.processing.completed_at).not.toBeNull();
    expect(await chunkCount(service, id)).toBe(0);
  });

  it("turns CSV rows and JSON key paths into readable text", async () => {
    const csv = await ready(service, alice, personaId, "crew.csv", "name,role\nAda,navigator\n\"Grace \"\"Amazing\"\" Hopper\",engineer\n");
    const csvChunk = await service.services.db.knex("knowledge_chunks").where({ document_id: csv.id }).first();
    expect(csvChunk.content).toBe('name: Ada\nrole: navigator\n\nname: Grace "Amazing" Hopper\nrole: engineer');
    const json = await ready(service, alice, personaId, "ship.json", JSON.stringify({ ship: { name: "Endeavour", crew: [{ name: "Cook" }] } }));
    const jsonChunk = await service.services.db.knex("knowledge_chunks").where({ document_id: json.id }).first();
    expect(jsonChunk.content).toBe("ship.name: Endeavour\nship.crew[0].name: Cook");
  });

  it("processes 20 uploads sent at once", async () => {
    const persona = await insertPersona(service, alice);
    const accepted = await Promise.all(
      Array.from({ length: 20 }, (_, i) => uploaded(service, alice, persona, `note-${i}.md`, `# Note ${i}\n\nThe harbour tide table for day ${i} lists high water at ${i % 12} o'clock.`)),
    );
    const deadline = Date.now() + 60_000;
    let list;
    do {
      await new Promise((wait) => setTimeout(wait, 200));
      list = await expectOk(listDocuments(service, alice, persona, { limit: 100 }));
    } while (list.data.some((doc) => doc.status === "processing") && Date.now() < deadline);
    expect(list.total).toBe(20);
    expect(new Set(accepted.map((doc) => doc.id)).size).toBe(20);
    expect(list.data.every((doc) => doc.status === "ready" && doc.chunk_count === 1)).toBe(true);
  });
});

describe("list, detail and delete", () => {
  it("lists newest first with total, limit and offset", async () => {
    const persona = await insertPersona(service, alice);
    const ids: string[] = [];
    for (const name of ["a.txt", "b.txt", "c.txt"]) ids.push((await uploaded(service, alice, persona, name, `About ${name}`)).id);
    const body = await expectOk(listDocuments(service, alice, persona, { limit: 2, offset: 0 }));
    expect(body).toMatchObject({ total: 3, limit: 2, offset: 0 });
    expect(body.data.map((d) => d.filename)).toEqual(["c.txt", "b.txt"]);
    expect(Object.keys(body.data[0]!).sort()).toEqual(["chunk_count", "created_at", "filename", "id", "size_bytes", "status", "truncated"]);
    const rest = await expectOk(listDocuments(service, alice, persona, { limit: 2, offset: 2 }));
    expect(rest.data.map((d) => d.id)).toEqual([ids[0]]);
  });

  it("deletes a document with its chunks", async () => {
    const doc = await ready(service, alice, personaId, "temporary.md", CORPUS["sailing.md"]!);
    expect(await chunkCount(service, doc.id)).toBeGreaterThan(0);
    expect(await expectOk(deleteDocument(service, alice, personaId, doc.id))).toEqual({ id: doc.id, deleted: true });
    expect(await chunkCount(service, doc.id)).toBe(0);
    await expectApiError(getDocument(service, alice, personaId, doc.id), 404, "not_found");
    await expectApiError(deleteDocument(service, alice, personaId, doc.id), 404, "not_found");
    const found = await results(service, alice, personaId, "sailboat close-hauled tacking upwind", 20);
    expect(found.some((r) => r.document_id === doc.id)).toBe(false);
  });

  it("answers 404 for an unknown document id and 400 for a malformed one", async () => {
    await expectApiError(getDocument(service, alice, personaId, "0193a7b2-5e6f-7a80-9b1c-3d4e5f6a7b03"), 404, "not_found");
    await expectApiError(getDocument(service, alice, personaId, "not-a-uuid"), 400, "invalid_request");
  });

  it("answers an empty result for a persona without ready documents", async () => {
    const persona = await insertPersona(service, alice);
    expect(await results(service, alice, persona, "anything at all")).toEqual([]);
  });
});

describe("the plan's knowledge-document limit", () => {
  it("answers 402 at the free plan's 5 documents, with limit, used and plan", async () => {
    const carol = await registerUser(service);
    const persona = await insertPersona(service, carol);
    for (let i = 0; i < 5; i++) await uploaded(service, carol, persona, `doc-${i}.txt`, `Document number ${i}`);
    const body = await expectError(await upload(service, carol, persona, "sixth.txt", "one too many"), 402, "plan_limit_exceeded");
    expect(body.error.details).toEqual({ limit: 5, used: 5, plan: "free" });
  });

  it("does not overshoot when uploads at the limit race", async () => {
    const dave = await registerUser(service);
    const persona = await insertPersona(service, dave);
    const statuses = await Promise.all(Array.from({ length: 9 }, (_, i) => upload(service, dave, persona, `race-${i}.txt`, `Racing ${i}`).then((r) => r.response.status)));
    expect(statuses.filter((s) => s === 202)).toHaveLength(5);
    expect(statuses.filter((s) => s === 402)).toHaveLength(4);
  });
});

describe("another user", () => {
  let docId: string;
  let publicPersona: string;

  beforeAll(async () => {
    docId = (await ready(service, alice, personaId, "secret-recipe.txt", "The secret glaze mixes smoked paprika with maple syrup.")).id;
    publicPersona = await insertPersona(service, alice, { isPublic: true });
    await ready(service, alice, publicPersona, "public-notes.txt", "Smoked paprika glaze notes for the public persona.");
  });

  it("can neither upload, list, read, query nor delete, private persona or public (404)", async () => {
    for (const persona of [personaId, publicPersona]) {
      await expectError(await upload(service, bob, persona, "mine.txt", "hello"), 404, "not_found");
      await expectApiError(listDocuments(service, bob, persona), 404, "not_found");
      await expectError(await query(service, bob, persona, "smoked paprika glaze"), 404, "not_found");
    }
    await expectApiError(getDocument(service, bob, personaId, docId), 404, "not_found");
    await expectApiError(deleteDocument(service, bob, personaId, docId), 404, "not_found");
    expect((await detail(service, alice, personaId, docId)).status).toBe("ready");
  });

  it("cannot reach a document through one of their own personas", async () => {
    const bobs = await insertPersona(service, bob);
    await expectApiError(getDocument(service, bob, bobs, docId), 404, "not_found");
    await expectApiError(deleteDocument(service, bob, bobs, docId), 404, "not_found");
    expect(await results(service, bob, bobs, "smoked paprika glaze")).toEqual([]);
  });

  it("gets none of the persona's chunks into their chat, while the owner does", async () => {
    const request = { personaId, query: "What is in the secret glaze?", limit: 4 };
    expect(await retrieveForChat(service.services, { ...request, userId: bob.id })).toEqual([]);
    expect(await retrieveForChat(service.services, { ...request, personaId: publicPersona, userId: bob.id })).toEqual([]);
    const own = await retrieveForChat(service.services, { ...request, userId: alice.id });
    expect(own[0]).toMatchObject({ document_id: docId, filename: "secret-recipe.txt", chunk_index: 0 });
    expect(own.every((chunk) => chunk.similarity >= 0 && chunk.similarity <= 1)).toBe(true);
  });

  it("retrieval never crosses personas of the same owner", async () => {
    const found = await retrieveForChat(service.services, { userId: alice.id, personaId: publicPersona, query: "smoked paprika glaze", limit: 10 });
    expect(found.map((chunk) => chunk.filename)).toEqual(["public-notes.txt"]);
  });
});
