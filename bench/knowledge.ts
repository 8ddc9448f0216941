// `npm run bench:knowledge`: (a) ingestion chunks per second with the offline embedder, through
// the real processing job (extract, chunk, embed, store in one transaction); (b) over a synthetic
// corpus of 100,000 clustered 1536-d vectors in the real `knowledge_chunks` table, query latency
// p50/p99 with the HNSW index and with an exact scan, and recall@10 of HNSW against exact, for
// several `hnsw.ef_search` values. Runs on DATABASE_URL (a scratch database is created on that
// server and dropped) or, when unset, on the embedded PGlite database in memory.
import { randomBytes, randomUUID } from "node:crypto";
import pg from "pg";
import { loadConfig } from "../server/toolkit/config.ts";
import { openDatabase, type Database } from "../server/toolkit/db/database.ts";
import { chunkText } from "../server/areas/knowledge/chunk.ts";
import { processDocument } from "../server/areas/knowledge/jobs.ts";
import { HNSW_EF_SEARCH } from "../server/areas/knowledge/search.ts";
import { createLogger } from "../server/toolkit/logger.ts";
import { LocalEmbeddings } from "../server/toolkit/providers/embeddings/local.ts";
import { EMBEDDING_DIMENSIONS } from "../server/toolkit/providers/embeddings/types.ts";
import type { Services } from "../server/toolkit/services.ts";

const CHUNKS = Number(process.env.BENCH_CHUNKS ?? 100_000);
const CLUSTERS = Number(process.env.BENCH_CLUSTERS ?? 200);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 100);
const EF_SEARCH = [40, 64, 100, 200];
const INGEST_DOCUMENTS = 20;
const INGEST_DOCUMENT_BYTES = 200_000;
const TARGETS = { recall: 0.95, speedup: 10 };
// Spread of points around their cluster centre, relative to the centre's own spread.
const NOISE = 0.9;

/** mulberry32: a small seeded PRNG, so every run builds the same corpus and queries. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = (
  "harbour tide lantern keeper granary mill river orchard ledger voyage compass anchor ferry beacon cellar " +
  "market weaver quarry bridge meadow forge barley signal archive chapel valley glacier summit reef canal"
).split(" ");

function syntheticText(bytes: number, random: () => number): string {
  const paragraphs: string[] = [];
  let size = 0;
  while (size < bytes) {
    const sentences = Array.from({ length: 4 + Math.floor(random() * 6) }, () => {
      const words = Array.from({ length: 8 + Math.floor(random() * 14) }, () => WORDS[Math.floor(random() * WORDS.length)]!);
      return `${words.join(" ")}.`.replace(/^./, (c) => c.toUpperCase());
    });
    const paragraph = sentences.join(" ");
    paragraphs.push(paragraph);
    size += paragraph.length + 2;
  }
  return paragraphs.join("\n\n");
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const ms = (value: number) => `${value.toFixed(value < 10 ? 2 : 1)} ms`;

async function scratchDatabase(): Promise<{ url: string | undefined; kind: string; drop: () => Promise<void> }> {
  const base = process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL;
  if (!base) return { url: undefined, kind: "embedded PGlite (in memory, WASM, one session)", drop: async () => undefined };
  const name = `persona_bench_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const version = (await admin.query<{ server_version: string }>("SHOW server_version")).rows[0]!.server_version;
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    kind: `PostgreSQL ${version} at ${url.host} (scratch database ${name})`,
    drop: async () => {
      const client = new pg.Client({ connectionString: base });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

async function owner(db: Database): Promise<{ userId: string; personaId: string }> {
  const userId = randomUUID();
  const personaId = randomUUID();
  const now = new Date();
  await db.knex("users").insert({ id: userId, email: `${userId}@bench.local`, username: `bench_${userId.slice(0, 8)}`, password_hash: "x", plan: "creator", created_at: now, updated_at: now });
  await db.knex("personas").insert({ id: personaId, creator_id: userId, name: "Bench", instructions: "-", model: "local-offline-v1", created_at: now, updated_at: now });
  return { userId, personaId };
}

async function newDocument(db: Database, who: { userId: string; personaId: string }, text: string, status = "processing"): Promise<string> {
  const id = randomUUID();
  const bytes = Buffer.from(text);
  await db.knex("knowledge_documents").insert({ id, persona_id: who.personaId, user_id: who.userId, filename: `${id}.txt`, kind: "txt", size_bytes: bytes.length, status, created_at: new Date() });
  if (status === "processing") await db.knex("knowledge_files").insert({ document_id: id, content: bytes });
  return id;
}

async function ingestion(services: Services, who: { userId: string; personaId: string }): Promise<void> {
  const random = prng(7);
  const texts = Array.from({ length: INGEST_DOCUMENTS }, () => syntheticText(INGEST_DOCUMENT_BYTES, random));
  // The parts on their own, to show where the time goes.
  let started = performance.now();
  const chunked = texts.map((text) => chunkText(text));
  const chunkSeconds = (performance.now() - started) / 1000;
  const allChunks = chunked.flat();
  started = performance.now();
  const embedder = new LocalEmbeddings();
  for (let i = 0; i < allChunks.length; i += 64) await embedder.embed(allChunks.slice(i, i + 64).map((c) => c.content));
  const embedSeconds = (performance.now() - started) / 1000;

  const ids: string[] = [];
  for (const text of texts) ids.push(await newDocument(services.db, who, text));
  started = performance.now();
  for (const id of ids) {
    const outcome = await processDocument(services, id);
    if (outcome !== "ready") throw new Error(`document ${id} ended ${outcome}`);
  }
  const jobSeconds = (performance.now() - started) / 1000;
  const [{ count }] = (await services.db.knex("knowledge_chunks").whereIn("document_id", ids).count({ count: "*" })) as [{ count: number }];

  const megabytes = (INGEST_DOCUMENTS * INGEST_DOCUMENT_BYTES) / 1e6;
  console.log(`\nIngestion, offline embedder, ${INGEST_DOCUMENTS} documents of ${INGEST_DOCUMENT_BYTES / 1000} kB (${megabytes.toFixed(1)} MB of text), one job at a time`);
  console.log(`  processing job (extract, chunk, embed, store)  ${(Number(count) / jobSeconds).toFixed(0).padStart(7)} chunks/s   ${count} chunks in ${jobSeconds.toFixed(1)} s  (${(megabytes / jobSeconds).toFixed(2)} MB/s)`);
  console.log(`  of which chunking alone (tokens counted)        ${(allChunks.length / chunkSeconds).toFixed(0).padStart(7)} chunks/s`);
  console.log(`  of which embedding alone (hashed lexical)       ${(allChunks.length / embedSeconds).toFixed(0).padStart(7)} chunks/s`);
}

/** Unit vector: a cluster centre plus uniform noise, as the SQL below builds the corpus. */
function queryVector(centres: number[][], random: () => number): number[] {
  const centre = centres[Math.floor(random() * centres.length)]!;
  const v = centre.map((x) => x + (random() - 0.5) * NOISE);
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  return v.map((x) => x / norm);
}

async function syntheticCorpus(db: Database, client: pg.Client, who: { userId: string; personaId: string }): Promise<{ centres: number[][]; indexDefinition: string }> {
  const random = prng(42);
  const centres = Array.from({ length: CLUSTERS }, () => Array.from({ length: EMBEDDING_DIMENSIONS }, () => random() - 0.5));
  const documentId = await newDocument(db, who, "synthetic", "ready");
  const indexDefinition = (await client.query<{ indexdef: string }>("SELECT indexdef FROM pg_indexes WHERE indexname = 'knowledge_chunks_embedding'")).rows[0]!.indexdef;
  // Loading without the indexes and building them once is much faster than growing them row by row.
  await client.query("DROP INDEX knowledge_chunks_embedding");
  await client.query("CREATE TEMP TABLE bench_centres (id int PRIMARY KEY, v vector(1536))");
  for (let i = 0; i < centres.length; i += 50) {
    const rows = centres.slice(i, i + 50);
    await client.query(`INSERT INTO bench_centres VALUES ${rows.map((_, j) => `($${2 * j + 1}, $${2 * j + 2})`).join(", ")}`, rows.flatMap((v, j) => [i + j, JSON.stringify(v)]));
  }
  await client.query("SELECT setseed(0.42)");
  const batch = 5_000;
  let started = performance.now();
  for (let from = 0; from < CHUNKS; from += batch) {
    const to = Math.min(CHUNKS, from + batch) - 1;
    // The noise is generated in the database: sending 100k x 1536 floats as text would dominate the run.
    await client.query(
      `INSERT INTO knowledge_chunks (id, document_id, persona_id, user_id, chunk_index, content, token_count, embedding)
       SELECT gen_random_uuid(), $1, $2, $3, i, 'synthetic chunk ' || i, 3,
              l2_normalize(c.v + (SELECT array_agg((random() - 0.5) * $6) FROM generate_series(1, 1536) WHERE i >= 0)::vector(1536))
       FROM generate_series($4::int, $5::int) AS i JOIN bench_centres c ON c.id = i % ${CLUSTERS}`,
      [documentId, who.personaId, who.userId, from, to, NOISE],
    );
    process.stderr.write(`\r  loading ${to + 1}/${CHUNKS} chunks...`);
  }
  process.stderr.write("\n");
  const loadSeconds = (performance.now() - started) / 1000;
  await client.query("ANALYZE knowledge_chunks");
  process.stderr.write("  building the HNSW index...\n");
  started = performance.now();
  await client.query("SET maintenance_work_mem = '2GB'").catch(() => undefined);
  await client.query("SET max_parallel_maintenance_workers = 2").catch(() => undefined);
  await client.query(indexDefinition);
  const buildSeconds = (performance.now() - started) / 1000;
  console.log(`\nSynthetic corpus: ${CHUNKS} chunks, ${CLUSTERS} clusters, 1536 dimensions`);
  console.log(`  load ${loadSeconds.toFixed(1)} s (${(CHUNKS / loadSeconds).toFixed(0)} rows/s, generated in SQL); HNSW build ${buildSeconds.toFixed(1)} s`);
  console.log(`  index: ${indexDefinition.replace(/^CREATE INDEX \S+ ON \S+ /, "")}`);
  return { centres, indexDefinition };
}

async function timedQueries(client: pg.Client, queries: string[], setup: string[]): Promise<{ ids: string[][]; latencies: number[]; plan: string }> {
  await client.query("BEGIN");
  for (const statement of setup) await client.query(statement);
  const sql = "SELECT id FROM knowledge_chunks ORDER BY embedding <=> $1::vector LIMIT 10";
  const explained = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN ${sql}`, [queries[0]]);
  const plan = explained.rows.map((row) => row["QUERY PLAN"]).find((line) => /Scan/.test(line))?.trim() ?? "?";
  // One warm-up pass of a few queries: the first touches of the index and heap are not typical.
  for (const q of queries.slice(0, 5)) await client.query(sql, [q]);
  const ids: string[][] = [];
  const latencies: number[] = [];
  for (const q of queries) {
    const started = performance.now();
    const result = await client.query<{ id: string }>(sql, [q]);
    latencies.push(performance.now() - started);
    ids.push(result.rows.map((row) => row.id));
  }
  await client.query("COMMIT");
  return { ids, latencies: latencies.sort((a, b) => a - b), plan };
}

async function main(): Promise<void> {
  console.log(`node ${process.version} (${process.platform}/${process.arch})`);
  const scratch = await scratchDatabase();
  console.log(`database: ${scratch.kind}`);
  const config = loadConfig({ DATABASE_URL: scratch.url, EMBEDDED_DB_IN_MEMORY: "true", LOG_LEVEL: "warn", EMBEDDINGS_PROVIDER: "local", LLM_PROVIDER: "local" });
  const log = createLogger(config);
  const db = await openDatabase(config, log);
  const client = new pg.Client({ connectionString: db.url });
  try {
    await db.migrate();
    await client.connect();
    const who = await owner(db);
    const services = { config, db, log, now: () => new Date(), embeddings: new LocalEmbeddings() } as unknown as Services;
    await ingestion(services, who);

    const { centres } = await syntheticCorpus(db, client, who);
    const random = prng(99);
    const queries = Array.from({ length: QUERIES }, () => JSON.stringify(queryVector(centres, random)));

    process.stderr.write("  exact scan queries...\n");
    const exact = await timedQueries(client, queries, ["SET LOCAL enable_indexscan = off"]);
    const exactP50 = percentile(exact.latencies, 50);
    console.log(`\nQuery: top 10 by cosine distance, ${QUERIES} queries, one connection`);
    console.log(`  exact scan                p50 ${ms(exactP50).padStart(9)}   p99 ${ms(percentile(exact.latencies, 99)).padStart(9)}   plan: ${exact.plan}`);
    let chosen: { ef: number; recall: number; speedup: number } | undefined;
    for (const ef of [...new Set([...EF_SEARCH, HNSW_EF_SEARCH])].sort((a, b) => a - b)) {
      const hnsw = await timedQueries(client, queries, [`SET LOCAL hnsw.ef_search = ${ef}`]);
      const recall = hnsw.ids.reduce((sum, ids, i) => sum + ids.filter((id) => exact.ids[i]!.includes(id)).length / 10, 0) / QUERIES;
      const p50 = percentile(hnsw.latencies, 50);
      const speedup = exactP50 / p50;
      const mark = ef === HNSW_EF_SEARCH ? "  <- the service's setting" : "";
      console.log(
        `  HNSW ef_search=${String(ef).padEnd(4)}      p50 ${ms(p50).padStart(9)}   p99 ${ms(percentile(hnsw.latencies, 99)).padStart(9)}   recall@10 ${recall.toFixed(3)}   ${speedup.toFixed(1)}x faster than exact (p50)${mark}`,
      );
      if (ef === HNSW_EF_SEARCH) chosen = { ef, recall, speedup };
      if (ef === EF_SEARCH[0]) console.log(`    plan: ${hnsw.plan}`);
    }
    if (chosen) {
      const ok = chosen.recall >= TARGETS.recall && chosen.speedup >= TARGETS.speedup;
      console.log(
        `\nTarget recall@10 >= ${TARGETS.recall} at >= ${TARGETS.speedup}x faster than exact, at ef_search=${chosen.ef}: ` +
          `${chosen.recall.toFixed(3)} at ${chosen.speedup.toFixed(1)}x -> ${ok ? "met" : "NOT met"}`,
      );
    }
  } finally {
    await client.end().catch(() => undefined);
    await db.close();
    await scratch.drop();
  }
}

await main();
