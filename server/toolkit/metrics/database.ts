import type { Knex } from "knex";
import type pg from "pg";
import { Counter, Histogram } from "prom-client";
import { metricsOn, registry, SECONDS } from "./registry.ts";

// The database as this process uses it: its connection pools (read when scraped) and how long
// statements take.

const statements = new Histogram({
  name: "persona_db_statement_duration_seconds",
  help: "How long database statements took, from sending to answer (knex's statements and the chat path's direct ones), by outcome (ok, error).",
  labelNames: ["outcome"] as const,
  buckets: [0.0005, ...SECONDS],
  registers: [registry],
});
const statementOk = statements.labels("ok");
const statementFailed = statements.labels("error");

/** Times a statement sent outside knex (the chat path's, db/positional.ts): a one-line wrap of its promise. */
export function timedStatement<T>(sent: Promise<T>): Promise<T> {
  if (!metricsOn()) return sent;
  const startedAt = performance.now();
  sent.then(
    () => statementOk.observe((performance.now() - startedAt) / 1000),
    () => statementFailed.observe((performance.now() - startedAt) / 1000),
  );
  return sent;
}

/** A statement knex announces with 'query' and ends with 'query-response' or 'query-error', named by its uid. */
interface KnexQuery {
  __knexQueryUid?: string;
}

/** Most statements timed at once; past it the table is cleared (a statement knex never ended must not leak). */
const MAX_OPEN = 10_000;

/** Times every statement knex runs for `knex`, through its query events. Returns the unsubscribe. */
export function timeKnexStatements(knex: Knex): () => void {
  const open = new Map<string, number>();
  const onQuery = (query: KnexQuery) => {
    if (!query.__knexQueryUid) return;
    if (open.size >= MAX_OPEN) open.clear();
    open.set(query.__knexQueryUid, performance.now());
  };
  const done = (histogram: typeof statementOk) => (_answer: unknown, query: KnexQuery) => {
    const startedAt = query.__knexQueryUid ? open.get(query.__knexQueryUid) : undefined;
    if (startedAt === undefined) return;
    open.delete(query.__knexQueryUid!);
    histogram.observe((performance.now() - startedAt) / 1000);
  };
  const onResponse = done(statementOk);
  const onError = done(statementFailed);
  knex.on("query", onQuery).on("query-response", onResponse).on("query-error", onError);
  return () => {
    knex.off("query", onQuery).off("query-response", onResponse).off("query-error", onError);
  };
}

/** One pool's state when scraped. */
export interface PoolState {
  pool: "knex" | "pg";
  inUse: number;
  idle: number;
  waiting: number;
}

interface TarnPool {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
}

/** The state of knex's pool (tarn) and of the pg pool beside it. */
export function poolStates(knex: Knex, pool: pg.Pool): PoolState[] {
  const tarn = (knex.client as { pool?: TarnPool }).pool;
  return [
    ...(tarn ? [{ pool: "knex" as const, inUse: tarn.numUsed(), idle: tarn.numFree(), waiting: tarn.numPendingAcquires() }] : []),
    { pool: "pg", inUse: pool.totalCount - pool.idleCount, idle: pool.idleCount, waiting: pool.waitingCount },
  ];
}

export const collectErrors = new Counter({
  name: "persona_metrics_collect_errors_total",
  help: "Scrapes in which a collector could not read its source (the job queue's tables, say, with the database down), by collector.",
  labelNames: ["collector"] as const,
  registers: [registry],
});
