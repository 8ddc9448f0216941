import { EventEmitter } from "node:events";
import { run, type TaskList, type WorkerEvents } from "graphile-worker";
import { watchWorker } from "../metrics/jobs.ts";
import type { Services } from "../services.ts";
import { traceTasks } from "../tracing/jobs.ts";
import { workerLogger } from "./logger.ts";
import { freeDeadWorkersLocks } from "./stale-locks.ts";
import { superviseRunner } from "./supervised-runner.ts";

export interface RunningWorker {
  stop: () => Promise<void>;
}

/**
 * Runs the job worker in this process, with the tasks and schedule of the registry
 * (server/tasks.ts), which the caller passes so that jobs/ imports no area. On the embedded database it polls (PGlite has no
 * LISTEN/NOTIFY across connections) and never uses named prepared statements. A runner that gives
 * up (a database failover can make it) is replaced by a new one in this process (supervised-runner.ts).
 */
export async function startWorker(services: Services, taskList: TaskList, crontab: string): Promise<RunningWorker> {
  const { config, db, log } = services;
  const liveness = await freeDeadWorkersLocks(db, log);
  const events: WorkerEvents = new EventEmitter();
  // Its progress for /readyz, and its jobs' durations and outcomes for the metrics.
  watchWorker(services, events, Object.keys(taskList));
  events.on("pool:create", ({ workerPool }) => {
    liveness.hold(workerPool.id).catch((error: unknown) => log.warn({ err: error }, "could not mark the worker pool alive"));
  });
  const supervised = await superviseRunner({
    events,
    log,
    freePools: liveness.release,
    onState: (state) => (services.health.worker = state),
    start: () =>
      run({
        events,
        // A session of its own: it LISTENs for new jobs, which a transaction-mode pooler cannot carry.
        pgPool: db.sessionPool,
        noPreparedStatements: true,
        concurrency: config.worker.concurrency,
        pollInterval: config.worker.pollIntervalMs,
        noHandleSignals: true,
        logger: workerLogger(log),
        // While traces are on, each job runs in a span linked to what queued it.
        taskList: traceTasks(taskList),
        crontab,
        // One poller fetches jobs for all workers of this process, instead of each worker polling:
        // on the embedded database every poll costs the API thread real time.
        // Job completions and failures are batched: unbatched, a refused connection there is an
        // unhandled rejection (they are not awaited), which ends the process. A batch that fails
        // makes graphile-worker give the runner up, and the supervisor starts a new one.
        preset: { worker: { localQueue: { size: config.worker.concurrency }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
      }),
  });
  return {
    stop: async () => {
      await supervised.stop();
      await liveness.stop();
    },
  };
}
