import { EventEmitter } from "node:events";
import { run, type Runner, type TaskList, type WorkerEvents } from "graphile-worker";
import type { Services } from "../services.ts";
import { workerLogger } from "./logger.ts";
import { freeDeadWorkersLocks } from "./stale-locks.ts";

export interface RunningWorker {
  stop: () => Promise<void>;
}

/**
 * Runs the job worker in this process, with the tasks and schedule of the registry
 * (server/tasks.ts), which the caller passes so that jobs/ imports no area. On the embedded database it polls (PGlite has no
 * LISTEN/NOTIFY across connections) and never uses named prepared statements.
 */
export async function startWorker(services: Services, taskList: TaskList, crontab: string): Promise<RunningWorker> {
  const { config, db, log } = services;
  const liveness = await freeDeadWorkersLocks(db, log);
  const events: WorkerEvents = new EventEmitter();
  events.on("pool:create", ({ workerPool }) => {
    liveness.hold(workerPool.id).catch((error: unknown) => log.warn({ err: error }, "could not mark the worker pool alive"));
  });
  const runner: Runner = await run({
    events,
    pgPool: db.pool,
    noPreparedStatements: true,
    concurrency: config.worker.concurrency,
    pollInterval: config.worker.pollIntervalMs,
    noHandleSignals: true,
    logger: workerLogger(log),
    taskList,
    crontab,
    // One poller fetches jobs for all workers of this process, instead of each worker polling:
    // on the embedded database every poll costs the API thread real time.
    // Job completions and failures go through graphile-worker's batcher, which retries them with
    // backoff (minutes) through a database outage; unbatched, a refused connection there is an
    // unhandled rejection (they are not awaited), which ends the process.
    preset: { worker: { localQueue: { size: config.worker.concurrency }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
  });
  runner.promise.catch((error: unknown) => {
    services.health.worker = "error";
    log.error({ err: error }, "job worker stopped unexpectedly");
  });
  return {
    stop: async () => {
      await runner.stop();
      await liveness.stop();
    },
  };
}
