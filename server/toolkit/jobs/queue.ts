import { makeWorkerUtils, type WorkerUtils } from "graphile-worker";
import type { Database } from "../db/database.ts";
import type { JobOptions } from "../db/jobs.ts";
import type { Logger } from "../logger.ts";
import { withTraceparent } from "../tracing/carrier.ts";
import { workerLogger } from "./logger.ts";

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
      // The job's span links to the request or job queueing it (tracing/carrier.ts).
      const job = await utils.addJob(task, withTraceparent(payload), {
        ...(options.runAt ? { runAt: options.runAt } : {}),
        ...(options.maxAttempts ? { maxAttempts: options.maxAttempts } : {}),
        ...(options.jobKey ? { jobKey: options.jobKey } : {}),
        ...(options.queueName ? { queueName: options.queueName } : {}),
      });
      return { id: String(job.id) };
    },
    release: async () => {
      await utils.release();
    },
  };
}
