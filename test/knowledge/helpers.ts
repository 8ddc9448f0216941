import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { createDeflate } from "node:zlib";
import { PDFDocument, PDFName, StandardFonts } from "pdf-lib";
import { expect } from "vitest";
import type { components } from "../../generated/openapi.d.ts";
import { multipart } from "../support/api.ts";
import { expectOk } from "../support/assertions.ts";
import type { TestService } from "../support/service.ts";
import type { TestUser } from "../support/users.ts";

/** A persona of `user`, written straight to the database (personas have their own tests; this avoids their plan limit). */
export async function insertPersona(service: TestService, user: TestUser, options: { isPublic?: boolean } = {}): Promise<string> {
  const id = randomUUID();
  const now = new Date();
  await service.services.db.knex("personas").insert({
    id,
    creator_id: user.id,
    name: "Archivist",
    handle: `archivist-${id.slice(-12)}`,
    instructions: "You answer from your archive.",
    model: service.services.config.llm.model,
    is_public: options.isPublic ?? false,
    created_at: now,
    updated_at: now,
  });
  return id;
}

export const documentsPath = (personaId: string) => `/v1/knowledge/${personaId}/documents`;

export function upload(service: TestService, user: TestUser, personaId: string, filename: string, content: string | Uint8Array, type = "application/octet-stream") {
  const form = new FormData();
  form.append("file", new Blob([typeof content === "string" ? content : new Uint8Array(content)], { type }), filename);
  return service.clientFor(user).POST("/v1/knowledge/{persona_id}/documents", { params: { path: { persona_id: personaId } }, body: multipart<components["schemas"]["DocumentUploadForm"]>(form) });
}

export type DocumentDetail = components["schemas"]["DocumentDetail"];

/** Uploads and answers the 202 body. */
export async function uploaded(service: TestService, user: TestUser, personaId: string, filename: string, content: string | Uint8Array) {
  return expectOk(upload(service, user, personaId, filename, content), 202);
}

export function getDocument(service: TestService, user: TestUser, personaId: string, documentId: string) {
  return service.clientFor(user).GET("/v1/knowledge/{persona_id}/documents/{doc_id}", { params: { path: { persona_id: personaId, doc_id: documentId } } });
}

export function deleteDocument(service: TestService, user: TestUser, personaId: string, documentId: string) {
  return service.clientFor(user).DELETE("/v1/knowledge/{persona_id}/documents/{doc_id}", { params: { path: { persona_id: personaId, doc_id: documentId } } });
}

export function listDocuments(service: TestService, user: TestUser, personaId: string, query: { limit?: number; offset?: number } = {}) {
  return service.clientFor(user).GET("/v1/knowledge/{persona_id}/documents", { params: { path: { persona_id: personaId }, query } });
}

export async function detail(service: TestService, user: TestUser, personaId: string, documentId: string): Promise<DocumentDetail> {
  return expectOk(getDocument(service, user, personaId, documentId));
}

/** Polls the detail endpoint until the document leaves `processing` (or the deadline passes). */
export async function settled(service: TestService, user: TestUser, personaId: string, documentId: string, timeoutMs = 30_000): Promise<DocumentDetail> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const body = await detail(service, user, personaId, documentId);
    if (body.status !== "processing") return body;
    if (Date.now() > deadline) throw new Error(`Document ${documentId} still processing after ${timeoutMs} ms`);
    await new Promise((wait) => setTimeout(wait, 100));
  }
}

/** Uploads a document and waits until it is ready. */
export async function ready(service: TestService, user: TestUser, personaId: string, filename: string, content: string | Uint8Array): Promise<DocumentDetail> {
  const { id } = await uploaded(service, user, personaId, filename, content);
  const body = await settled(service, user, personaId, id);
  expect(body.status, JSON.stringify(body)).toBe("ready");
  return body;
}

export function query(service: TestService, user: TestUser, personaId: string, text: string, limit?: number) {
  return service.clientFor(user).POST("/v1/knowledge/{persona_id}/query", {
    params: { path: { persona_id: personaId } },
    body: { query: text, ...(limit ? { limit } : {}) },
  });
}

export type QueryResult = components["schemas"]["KnowledgeQueryResult"];

export async function results(service: TestService, user: TestUser, personaId: string, text: string, limit?: number): Promise<QueryResult[]> {
  const body = await expectOk(query(service, user, personaId, text, limit));
  expect(body.total_results).toBe(body.results.length);
  expect(body.query).toBe(text);
  return body.results;
}

export async function chunkCount(service: TestService, documentId: string): Promise<number> {
  const [row] = await service.services.db.knex("knowledge_chunks").where({ document_id: documentId }).count<{ count: number }[]>({ count: "*" });
  return Number(row?.count ?? 0);
}

/** Distinct subjects, several paragraphs each: a query on one must find its own document first. */
export const CORPUS: Record<string, string> = {
  "astronomy.md": [
    "# Planets of the inner solar system",
    "Venus orbits inside Earth's orbit, so from here it never appears more than about 47 degrees from the Sun: an evening star after sunset or a morning star before dawn. Its thick carbon dioxide atmosphere traps heat, making the surface hotter than Mercury.",
    "Mars has two small moons, Phobos and Deimos. Its red colour comes from iron oxide dust. Olympus Mons, a shield volcano on Mars, is the tallest mountain of any planet.",
  ].join("\n\n"),
  "baking.txt": [
    "Sourdough bread rises with a starter of wild yeast and lactic acid bacteria instead of commercial yeast. Feed the starter flour and water daily until it doubles within hours.",
    "For a crisp crust, bake the loaf in a preheated Dutch oven at 250 degrees Celsius with the lid on for twenty minutes, then remove the lid so the crust browns.",
  ].join("\n\n"),
  "sailing.md": [
    "## Points of sail",
    "A sailboat cannot sail directly into the wind. Close-hauled, the sails are trimmed in tight and the boat heads about 45 degrees off the wind; tacking zigzags the boat upwind.",
    "When running downwind the mainsail is eased far out, and an accidental gybe can swing the boom violently across the cockpit.",
  ].join("\n\n"),
  "beekeeping.csv": [
    "topic,advice",
    "hive inspection,Inspect the brood frames every week in spring to spot queen cells before the colony swarms",
    "\"honey harvest\",\"Extract honey only from capped frames, leaving enough stores for the bees to overwinter\"",
  ].join("\r\n"),
  "chess.json": JSON.stringify({
    openings: [
      { name: "Sicilian Defence", moves: "1.e4 c5", idea: "Black fights for the centre asymmetrically with the c-pawn" },
      { name: "Queen's Gambit", moves: "1.d4 d5 2.c4", idea: "White offers a pawn to deflect Black's d-pawn from the centre" },
    ],
    endgame: { principle: "Activate the king in the endgame; a rook belongs behind a passed pawn" },
  }),
};

/** A query per document of the corpus, worded differently from the text. */
export const QUESTIONS: [string, string][] = [
  ["Why is Venus always seen close to the Sun, as a morning or evening star?", "astronomy.md"],
  ["How do I keep my sourdough starter alive and get a crisp bread crust?", "baking.txt"],
  ["How does a sailboat tack upwind against the wind?", "sailing.md"],
  ["When should I inspect the hive so the bees do not swarm?", "beekeeping.csv"],
  ["What is the idea behind the Sicilian Defence opening in chess?", "chess.json"],
];

/** `size` zero bytes, deflated (about 1,000 to 1), made a megabyte at a time. */
async function deflatedZeros(size: number): Promise<Buffer> {
  const deflate = createDeflate({ level: 9 });
  const parts: Buffer[] = [];
  deflate.on("data", (part: Buffer) => parts.push(part));
  const block = Buffer.alloc(1024 * 1024);
  for (let written = 0; written < size; written += block.length) {
    if (!deflate.write(block.subarray(0, Math.min(block.length, size - written)))) await once(deflate, "drain");
  }
  deflate.end();
  await once(deflate, "end");
  return Buffer.concat(parts);
}

/**
 * Issue 31 M7: a PDF whose last page's content stream is `inflated` zero bytes, deflated (400 MB:
 * a 399 kB file), after a page of ordinary text when `textBefore` is given.
 */
export async function pdfBomb(inflated: number, textBefore?: string): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  if (textBefore) {
    const font = await pdf.embedFont(StandardFonts.Helvetica);
    pdf.addPage().drawText(textBefore, { x: 40, y: 780, size: 12, font });
  }
  const page = pdf.addPage();
  page.node.set(PDFName.of("Contents"), pdf.context.register(pdf.context.stream(await deflatedZeros(inflated), { Filter: "FlateDecode" })));
  return pdf.save();
}
