import type { Knex } from "knex";
import { withTraceparent } from "../tracing/carrier.ts";

export interface JobOptions {
  runAt?: Date;
  maxAttempts?: number;
  /** A job with the same key replaces the pending one instead of queueing twice. */
  jobKey?: string;
  /** Jobs of one named queue run one at a time, in order. */
  queueName?: string;
}

/**
 * Queues a job inside the caller's transaction (graphile-worker's `add_job` is SQL), so the job
 * exists exactly when the rows it works on do. It must run on the transaction's own connection:
 * on the embedded database a second connection would wait for the transaction to end, which waits
 * for it. It lives with the database, not with jobs/, so that areas can queue work without
 * importing the worker that imports them.
 */
export async function addJobIn(trx: Knex.Transaction, task: string, payload: Record<string, unknown>, options: JobOptions = {}): Promise<void> {
  await trx.raw("SELECT graphile_worker.add_job(?, ?::json, run_at => ?, max_attempts => ?, job_key => ?, queue_name => ?)", [
    task,
    // The job's span links to the request or job queueing it (tracing/carrier.ts).
    JSON.stringify(withTraceparent(payload)),
    options.runAt ?? null,
    options.maxAttempts ?? null,
    options.jobKey ?? null,
    options.queueName ?? null,
  ]);
}
