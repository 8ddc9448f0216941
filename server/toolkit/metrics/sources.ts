import { Gauge } from "prom-client";
import type { Services } from "../services.ts";
import { collectErrors, poolStates, type PoolState } from "./database.ts";
import { queueByTask, type QueueRow } from "./jobs.ts";
import { registry } from "./registry.ts";

// What is read when scraped rather than counted as it happens: the database pools and the job
// queue of each service this process runs (one in production; tests run several in one process).

const sources = new Set<Services>();

/** Reads the service's pools and queue when scraped, until the returned function is called. */
export function addSource(services: Services): () => void {
  sources.add(services);
  return () => void sources.delete(services);
}

const logged = new WeakSet<Services>();

/** Every source's queue, one statement per database (services sharing one database read it once). */
async function queues(): Promise<QueueRow[]> {
  const byDatabase = new Map<string, Services>();
  for (const services of sources) byDatabase.set(services.db.url, services);
  const read = await Promise.all(
    [...byDatabase.values()].map((services) =>
      queueByTask(services.db.knex).catch((error: unknown) => {
        collectErrors.inc({ collector: "job_queue" });
        // Once per service: a scraper every 15 s must not fill the log while the database is down.
        if (!logged.has(services)) services.log.warn({ err: error }, "metrics: could not read the job queue");
        logged.add(services);
        return [];
      }),
    ),
  );
  return read.flat();
}

let reading: Promise<QueueRow[]> | undefined;
/** Both queue gauges are collected in one scrape (at once: prom-client collects them together): one read serves both. */
function queueRows(): Promise<QueueRow[]> {
  reading ??= queues().finally(() => setTimeout(() => (reading = undefined), 0));
  return reading;
}

new Gauge({
  name: "persona_job_queue_jobs",
  help: "Jobs in the queue (the whole database's, as this process reads it when scraped), by task and state: due (may run now, waiting for a worker), scheduled (later), running (locked by a worker), failed (out of attempts, kept).",
  labelNames: ["task", "state"] as const,
  registers: [registry],
  async collect() {
    this.reset();
    for (const row of await queueRows()) {
      for (const state of ["due", "scheduled", "running", "failed"] as const) this.inc({ task: row.task, state }, row[state]);
    }
  },
});

new Gauge({
  name: "persona_job_queue_oldest_due_seconds",
  help: "How long the longest-waiting due job of each task has waited for a worker (0 when none waits): the queue's age.",
  labelNames: ["task"] as const,
  registers: [registry],
  async collect() {
    this.reset();
    const oldest = new Map<string, number>();
    for (const row of await queueRows()) oldest.set(row.task, Math.max(oldest.get(row.task) ?? 0, Number(row.oldest_due_seconds ?? 0)));
    for (const [task, seconds] of oldest) this.set({ task }, seconds);
  },
});

function pools(): PoolState[] {
  return [...sources].flatMap((services) => poolStates(services.db.knex, services.db.pool));
}

new Gauge({
  name: "persona_db_pool_connections",
  help: "Database connections of this process's pools, by pool (knex: the service's statements; pg: the job worker, rate limiter and notifications) and state (in_use, idle).",
  labelNames: ["pool", "state"] as const,
  registers: [registry],
  collect() {
    this.reset();
    for (const { pool, inUse, idle } of pools()) {
      this.inc({ pool, state: "in_use" }, inUse);
      this.inc({ pool, state: "idle" }, idle);
    }
  },
});

new Gauge({
  name: "persona_db_pool_waiting",
  help: "Requests for a connection waiting because the pool is at DATABASE_POOL_MAX, by pool.",
  labelNames: ["pool"] as const,
  registers: [registry],
  collect() {
    this.reset();
    for (const { pool, waiting } of pools()) this.inc({ pool }, waiting);
  },
});
