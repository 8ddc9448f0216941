import { makeWorkerUtils, type WorkerUtils } from "graphile-worker";
import type { Knex } from "knex";
import type { Database } from "../db/database.ts";
import type { Logger } from "../logger.ts";
import { workerLogger } from "./logger.ts";

export interface JobOptions {
  runAt?: Date;
  maxAttempts?: number;
  /** A job with the same key replaces the pending one instead of queueing twice. */
  jobKey?: string;
}

/** Puts work on the graphile-worker queue; any worker process sharing the database runs it. */
export interface JobQueue {
  add: (task: string, payload: Record<string, unknown>, options?: JobOptions) => Promise<{ id: string }>;
  release: () => Promise<void>;
}

export async function openJobQueue(db: Database, log: Logger): Promise<JobQueue & { utils: WorkerUtils }> {
  const utils = await makeWorkerUtils({ pgPool: db.pool, noPreparedStatements: true, logger: workerLogger(log) });
  // Installs or upgrades graphile-worker's own schema; safe to run from several processes.
  await utils.migrate();
  return {
    utils,
    add: async (task, payload, options = {}) => {
      const job = await utils.addJob(task, payload, {
        ...(options.runAt ? { runAt: options.runAt } : {}),
        ...(options.maxAttempts ? { maxAttempts: options.maxAttempts } : {}),
        ...(options.jobKey ? { jobKey: options.jobKey } : {}),
      });
      return { id: String(job.id) };
    },
    release: async () => {
      await utils.release();
    },
  };
}

/**
 * Queues a job inside the caller's transaction (graphile-worker's `add_job` is SQL), so the job
 * exists exactly when the rows it works on do. It must run on the transaction's own connection:
 * on the embedded database a second connection would wait for the transaction to end, which waits
 * for it.
 */
export async function addJobIn(trx: Knex.Transaction, task: string, payload: Record<string, unknown>, options: JobOptions = {}): Promise<void> {
  await trx.raw("SELECT graphile_worker.add_job(?, ?::json, run_at => ?, max_attempts => ?, job_key => ?)", [
    task,
    JSON.stringify(payload),
    options.runAt ?? null,
    options.maxAttempts ?? null,
    options.jobKey ?? null,
  ]);
}
