import type { Job, WorkerEvents } from "graphile-worker";
import type { Knex } from "knex";
import { Counter, Histogram } from "prom-client";
import type { Services } from "../services.ts";
import { metricsOn, registry, SECONDS } from "./registry.ts";

// The job worker: what this process's worker ran (from graphile-worker's events) and what the
// queue holds (asked of its tables when scraped), and the progress /readyz judges the worker by.

const jobDurations = new Histogram({
  name: "persona_job_duration_seconds",
  help: "How long a job ran in this process's worker, by task and outcome (success, error).",
  labelNames: ["task", "outcome"] as const,
  buckets: [...SECONDS, 300, 600],
  registers: [registry],
});

const jobOutcomes = new Counter({
  name: "persona_jobs_total",
  help: "Jobs this process's worker ran, by task and outcome: success, retry (failed, to be tried again), failed (failed its last attempt).",
  labelNames: ["task", "outcome"] as const,
  registers: [registry],
});

/** What /readyz needs to know of a worker: when it last started a job, and how many it runs now. */
export interface WorkerProgress {
  /** performance.now() of the last job started, or of the worker's own start. */
  lastStartedAt: number;
  running: number;
  /** The tasks this worker runs: a due job of another task is not its to start. */
  tasks: readonly string[];
}

const progress = new WeakMap<Services, WorkerProgress>();

/** The progress of the service's worker; undefined when it runs none. */
export function workerProgress(services: Services): WorkerProgress | undefined {
  return progress.get(services);
}

/**
 * Follows the service's worker through its events (a one-line call where the worker starts): the
 * progress /readyz judges it by, always, and while metrics are on each job's duration and outcome.
 */
export function watchWorker(services: Services, events: WorkerEvents, tasks: readonly string[]): void {
  const state: WorkerProgress = { lastStartedAt: performance.now(), running: 0, tasks };
  progress.set(services, state);
  const started = new Map<string, number>();
  events.on("job:start", ({ job }) => {
    state.lastStartedAt = performance.now();
    state.running++;
    if (metricsOn()) started.set(job.id, state.lastStartedAt);
  });
  events.on("job:complete", () => {
    state.running = Math.max(0, state.running - 1);
  });
  if (!metricsOn()) return;
  const finished = (job: Job, outcome: "success" | "error") => {
    const at = started.get(job.id);
    started.delete(job.id);
    if (at !== undefined) jobDurations.observe({ task: job.task_identifier, outcome }, (performance.now() - at) / 1000);
  };
  events.on("job:success", ({ job }) => {
    finished(job, "success");
    jobOutcomes.inc({ task: job.task_identifier, outcome: "success" });
  });
  events.on("job:error", ({ job }) => {
    finished(job, "error");
    // `attempts` counts the attempt that just failed.
    jobOutcomes.inc({ task: job.task_identifier, outcome: job.attempts >= job.max_attempts ? "failed" : "retry" });
  });
}

/**
 * How long the longest-waiting job of `tasks` that could run now has been due, in milliseconds
 * (0 when none waits): not locked, attempts left, run_at passed, its named queue (if any) free.
 */
export async function longestDueWaitMs(knex: Knex, tasks: readonly string[]): Promise<number> {
  const { rows } = await knex.raw<{ rows: { waited_ms: number | null }[] }>(
    `SELECT extract(epoch FROM now() - min(j.run_at)) * 1000 AS waited_ms
       FROM graphile_worker._private_jobs j
       JOIN graphile_worker._private_tasks t ON t.id = j.task_id
      WHERE j.is_available AND j.run_at <= now() AND t.identifier = ANY(?::text[])
        AND (j.job_queue_id IS NULL OR EXISTS (SELECT 1 FROM graphile_worker._private_job_queues q WHERE q.id = j.job_queue_id AND q.is_available))`,
    [[...tasks]],
  );
  return Number(rows[0]?.waited_ms ?? 0);
}

export interface QueueRow {
  task: string;
  due: number;
  scheduled: number;
  running: number;
  failed: number;
  oldest_due_seconds: number | null;
}

/** The queue by task, in one statement over graphile-worker's tables (run when scraped, never on a request). */
export async function queueByTask(knex: Knex): Promise<QueueRow[]> {
  const { rows } = await knex.raw<{ rows: QueueRow[] }>(
    `SELECT t.identifier AS task,
            count(j.id) FILTER (WHERE j.is_available AND j.run_at <= now()) AS due,
            count(j.id) FILTER (WHERE j.is_available AND j.run_at > now()) AS scheduled,
            count(j.id) FILTER (WHERE j.locked_at IS NOT NULL) AS running,
            count(j.id) FILTER (WHERE j.locked_at IS NULL AND j.attempts >= j.max_attempts) AS failed,
            extract(epoch FROM now() - min(j.run_at) FILTER (WHERE j.is_available AND j.run_at <= now())) AS oldest_due_seconds
       FROM graphile_worker._private_tasks t
       LEFT JOIN graphile_worker._private_jobs j ON j.task_id = t.id
      GROUP BY t.identifier`,
  );
  return rows.map((row) => ({ ...row, due: Number(row.due), scheduled: Number(row.scheduled), running: Number(row.running), failed: Number(row.failed) }));
}
