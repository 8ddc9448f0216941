import type { Knex } from "knex";
import { toSql } from "pgvector";
import { offsetPage } from "../../toolkit/db/paging.ts";
import type { PageWindow } from "../../toolkit/http/paging.ts";
import { addJobIn } from "../../toolkit/db/jobs.ts";
import type { DocumentKind } from "./content.ts";

/**
 * An SQL condition, true when the persona `persona` (an SQL expression) has knowledge of the user
 * bound at its one `?`: for a statement of another area that asks in its own round trip (the chat turn).
 */
export const hasKnowledgeSql = (persona: string) => `EXISTS (SELECT 1 FROM knowledge_chunks k WHERE k.persona_id = ${persona} AND k.user_id = ?)`;

export type DocumentStatus = "processing" | "ready" | "failed";

export interface DocumentRow {
  id: string;
  persona_id: string;
  user_id: string;
  filename: string;
  kind: DocumentKind;
  size_bytes: number;
  status: DocumentStatus;
  chunk_count: number | null;
  error: string | null;
  /** Why only part of the document was indexed (a per-document limit, issue 31); null when whole. */
  truncation: string | null;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  duration_ms: number | null;
}

export interface NewChunk {
  id: string;
  chunk_index: number;
  content: string;
  token_count: number;
  embedding: number[];
}

export interface ChunkHit {
  chunk_id: string;
  document_id: string;
  filename: string;
  content: string;
  chunk_index: number;
  /** 1 - cosine distance, unclamped (NaN for a zero vector). */
  similarity: number;
  /** The reciprocal-rank-fusion score the results are ordered by. */
  score: number;
}

const DOCUMENT_COLUMNS = [
  "id", "persona_id", "user_id", "filename", "kind", "size_bytes", "status", "chunk_count", "error", "truncation", "created_at",
  "started_at", "completed_at", "duration_ms",
] as const;

/** The user's documents over all their personas, in any status: what the plan's quota counts. */
export async function countUserDocuments(knex: Knex, userId: string): Promise<number> {
  const [row] = await knex("knowledge_documents").where({ user_id: userId }).count<{ count: number }[]>({ count: "*" });
  return Number(row?.count ?? 0);
}

/** The processing job's key: one job per document. */
export const documentJobKey = (documentId: string) => `knowledge_process:${documentId}`;

// Issue 31: the bytes of a document go to and come from the database a slice at a time. pg sends and
// receives bytea as hex text: 10 MB in one statement was 20 MB of text built or parsed in one go on
// the API's event loop (35 to 60 ms, more under load); a MiB at a time is a few milliseconds each.
const FILE_SLICE_BYTES = 1024 * 1024;

/**
 * Stores a new document with its bytes and queues its processing job, all in `trx`: the job exists
 * exactly when the document does (graphile-worker's `add_job` is transactional SQL).
 */
export async function insertDocumentWithJob(
  trx: Knex.Transaction,
  row: Pick<DocumentRow, "id" | "persona_id" | "user_id" | "filename" | "kind" | "size_bytes" | "created_at">,
  content: Uint8Array,
  job: { task: string; maxAttempts: number },
): Promise<DocumentRow> {
  const [inserted] = await trx("knowledge_documents").insert({ ...row, status: "processing" }).returning([...DOCUMENT_COLUMNS]);
  const bytes = Buffer.from(content.buffer, content.byteOffset, content.byteLength);
  await trx("knowledge_files").insert({ document_id: row.id, content: bytes.subarray(0, FILE_SLICE_BYTES) });
  for (let at = FILE_SLICE_BYTES; at < bytes.length; at += FILE_SLICE_BYTES) {
    await trx("knowledge_files")
      .where({ document_id: row.id })
      .update({ content: trx.raw("content || ?", [bytes.subarray(at, at + FILE_SLICE_BYTES)]) });
  }
  await addJobIn(trx, job.task, { documentId: row.id }, { maxAttempts: job.maxAttempts, jobKey: documentJobKey(row.id) });
  return inserted as DocumentRow;
}

export async function listPersonaDocuments(knex: Knex, personaId: string, window: PageWindow): Promise<{ rows: DocumentRow[]; total: number }> {
  const query = knex("knowledge_documents").select([...DOCUMENT_COLUMNS]).where({ persona_id: personaId });
  return offsetPage<DocumentRow>(query, "created_at desc, id desc", window);
}

export async function findPersonaDocument(knex: Knex, personaId: string, id: string): Promise<DocumentRow | undefined> {
  return knex("knowledge_documents").select([...DOCUMENT_COLUMNS]).where({ id, persona_id: personaId }).first();
}

/** Deletes the document; its bytes and chunks go with it (foreign keys cascade). */
export async function deletePersonaDocument(knex: Knex, personaId: string, id: string): Promise<boolean> {
  return (await knex("knowledge_documents").where({ id, persona_id: personaId }).delete()) > 0;
}

/** A document still processing, with its bytes; undefined once it is ready, failed or deleted. */
export async function documentToProcess(knex: Knex, id: string): Promise<{ document: DocumentRow; content: Buffer } | undefined> {
  const row = await knex("knowledge_documents as d")
    .join("knowledge_files as f", "f.document_id", "d.id")
    .select([...DOCUMENT_COLUMNS.map((column) => `d.${column}`), knex.raw("octet_length(f.content) AS content_bytes")])
    .where({ "d.id": id, "d.status": "processing" })
    .first();
  if (!row) return undefined;
  const { content_bytes: size, ...document } = row as DocumentRow & { content_bytes: number | string };
  const slices: Buffer[] = [];
  for (let at = 0; at < Number(size); at += FILE_SLICE_BYTES) {
    const slice = await knex("knowledge_files")
      .where({ document_id: id })
      .first(knex.raw("substring(content FROM ? FOR ?) AS part", [at + 1, FILE_SLICE_BYTES]));
    // Deleted meanwhile: nothing to process.
    if (!slice) return undefined;
    slices.push(slice.part as Buffer);
  }
  return { document, content: Buffer.concat(slices) };
}

/** Records when a worker first picked the document up (a retry keeps the first time). */
export async function markStarted(knex: Knex, id: string, now: Date): Promise<Date> {
  const [row] = await knex("knowledge_documents")
    .where({ id })
    .update({ started_at: knex.raw("coalesce(started_at, ?)", [now]) })
    .returning(["started_at"]);
  return (row?.started_at as Date | undefined) ?? now;
}

// Rows per INSERT: each carries a 1536-float vector literal (about 30 kB), written on the API's
// event loop; 25 of them are a few milliseconds of work there (100 were 15 to 30 ms, issue 31).
const CHUNK_INSERT_BATCH = 25;

/**
 * In one transaction: inserts every chunk, marks the document ready (with `truncation` when a limit
 * cut it) and drops its bytes. False, with nothing written, when the document was deleted or
 * finished meanwhile.
 */
export async function completeDocument(knex: Knex, id: string, chunks: NewChunk[], truncation: string | null, now: Date): Promise<boolean> {
  return knex.transaction(async (trx) => {
    const document = await trx("knowledge_documents").select("persona_id", "user_id", "started_at").where({ id, status: "processing" }).forUpdate().first();
    if (!document) return false;
    for (let i = 0; i < chunks.length; i += CHUNK_INSERT_BATCH) {
      await trx("knowledge_chunks").insert(
        chunks.slice(i, i + CHUNK_INSERT_BATCH).map((chunk) => ({
          ...chunk,
          embedding: toSql(chunk.embedding),
          document_id: id,
          persona_id: document.persona_id,
          user_id: document.user_id,
        })),
      );
    }
    await finish(trx, id, { status: "ready", chunk_count: chunks.length, error: null, truncation }, document.started_at as Date | null, now);
    return true;
  });
}

/** Marks a document still processing as failed, with the reason, and drops its bytes. */
export async function failDocument(knex: Knex, id: string, error: string, now: Date): Promise<void> {
  await knex.transaction(async (trx) => {
    const document = await trx("knowledge_documents").select("started_at").where({ id, status: "processing" }).forUpdate().first();
    if (document) await finish(trx, id, { status: "failed", chunk_count: null, error }, document.started_at as Date | null, now);
  });
}

async function finish(
  trx: Knex.Transaction,
  id: string,
  outcome: { status: DocumentStatus; chunk_count: number | null; error: string | null; truncation?: string | null },
  startedAt: Date | null,
  now: Date,
): Promise<void> {
  const started = startedAt ?? now;
  await trx("knowledge_documents")
    .where({ id })
    .update({ ...outcome, started_at: started, completed_at: now, duration_ms: Math.max(0, now.getTime() - started.getTime()) });
  await trx("knowledge_files").where({ document_id: id }).delete();
}

/** Whether the persona has any searchable chunk of this owner: lets a search skip embedding its query. */
export async function hasChunks(knex: Knex, personaId: string, userId: string): Promise<boolean> {
  const row = await knex("knowledge_chunks").select(knex.raw("1")).where({ persona_id: personaId, user_id: userId }).first();
  return row !== undefined;
}

export interface ChunkSearch {
  personaId: string;
  /** The persona's owner: chunks of another owner never match, whatever the persona id. */
  userId: string;
  embedding: number[];
  text: string;
  limit: number;
  /** Candidates taken from each ranking before fusion. */
  candidates: number;
  /** HNSW search breadth (`hnsw.ef_search`). */
  efSearch: number;
  /** Reciprocal rank fusion constant. */
  rrfK: number;
  /** Least cosine similarity of a vector candidate; a chunk below it enters the fusion only by its words. */
  minSimilarity: number;
  /** Least `ts_rank_cd` of a full-text candidate. */
  minTextRank: number;
}

/**
 * Hybrid search over one persona's chunks: the nearest `candidates` by cosine distance (HNSW) and
 * the best `candidates` by full-text rank (`ts_rank_cd`, GIN), fused by reciprocal rank
 * (sum of 1 / (k + rank) over the rankings a chunk appears in). The query's terms are OR-ed
 * (`websearch_to_tsquery` ANDs them, which a natural-language question rarely satisfies) except
 * that a `-term` still excludes. Iterative index scans let HNSW keep looking when the persona
 * filter rejects what it finds first. Only candidates at or above their side's floor are ranked and
 * fused (`minSimilarity`, `minTextRank`): when nothing is relevant, nothing is found.
 */
export async function searchChunks(knex: Knex, search: ChunkSearch): Promise<ChunkHit[]> {
  const vector = toSql(search.embedding) as string;
  return knex.transaction(async (trx) => {
    await trx.raw(`SET LOCAL hnsw.ef_search = ${Math.max(search.efSearch, search.candidates) | 0}`);
    await trx.raw("SET LOCAL hnsw.iterative_scan = relaxed_order");
    const result = await trx.raw<{ rows: ChunkHit[] }>(
      `WITH vec AS MATERIALIZED (
         SELECT id, row_number() OVER (ORDER BY distance, id) AS rank FROM (
           SELECT id, embedding <=> ?::vector AS distance FROM knowledge_chunks
           WHERE persona_id = ? AND user_id = ?
           ORDER BY embedding <=> ?::vector LIMIT ?
         ) nearest
         WHERE distance <= 1 - ?::float8
       ),
       query AS (
         SELECT regexp_replace(websearch_to_tsquery('english', ?)::text, ' & (\\?!!)', ' | ', 'g')::tsquery AS q
       ),
       fts AS MATERIALIZED (
         SELECT id, row_number() OVER (ORDER BY score DESC, id) AS rank FROM (
           SELECT c.id, ts_rank_cd(c.search, query.q) AS score FROM knowledge_chunks c, query
           WHERE c.persona_id = ? AND c.user_id = ? AND c.search @@ query.q
           ORDER BY score DESC LIMIT ?
         ) matched
         WHERE score >= ?::float8
       ),
       fused AS (
         SELECT coalesce(vec.id, fts.id) AS id,
                coalesce(1.0 / (? + vec.rank), 0) + coalesce(1.0 / (? + fts.rank), 0) AS score
         FROM vec FULL JOIN fts ON fts.id = vec.id
       )
       SELECT c.id AS chunk_id, c.document_id, d.filename, c.content, c.chunk_index,
              1 - (c.embedding <=> ?::vector) AS similarity, fused.score::float8 AS score
       FROM fused
       JOIN knowledge_chunks c ON c.id = fused.id
       JOIN knowledge_documents d ON d.id = c.document_id
       ORDER BY fused.score DESC, similarity DESC, c.id
       LIMIT ?`,
      [
        vector, search.personaId, search.userId, vector, search.candidates, search.minSimilarity,
        search.text,
        search.personaId, search.userId, search.candidates, search.minTextRank,
        search.rrfK, search.rrfK,
        vector, search.limit,
      ],
    );
    return result.rows;
  });
}
