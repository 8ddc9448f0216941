import type { Runner, WorkerEvents } from "graphile-worker";
import type { Logger } from "../logger.ts";

/**
 * How long after a runner was given up a new one is started, then longer while that fails.
 *
 * graphile-worker 0.18 gives up its worker pool when it cannot record a job's completion or
 * failure: its batcher's retry loop leaves after the first failure (graphile/worker#636), so one
 * statement cut by a failover or a restart of the database is enough. The pool then stops taking
 * jobs, and its shutdown may never end (it waits for the failed batch, whose hold is never let go),
 * so the runner's promise may never settle either. Without a new runner the process would run no
 * job again until it is restarted.
 */
const RESTART_MS = [1_000, 2_000, 5_000, 10_000, 30_000];

interface Running {
  runner: Runner;
  /** The worker pools it created (their jobs are freed when it is given up). */
  pools: string[];
  ended: boolean;
}

export interface SupervisedRunner {
  stop: () => Promise<void>;
}

/**
 * Runs `start()`'s runner and replaces it when it ends on its own or its pool reports a fatal
 * error: the jobs its pools held are freed (`freePools`), then a new runner is started after
 * RESTART_MS, again until one starts. `onState` hears "error" when one is given up and "ok" once
 * its replacement runs (the readiness probe's `worker` check).
 */
export async function superviseRunner(options: {
  start: () => Promise<Runner>;
  events: WorkerEvents;
  freePools: (poolIds: readonly string[]) => Promise<void>;
  onState: (state: "ok" | "error") => void;
  log: Logger;
}): Promise<SupervisedRunner> {
  const { events, log } = options;
  // A runner's pools are created while `start()` runs: they are counted to the runner being started.
  let starting: string[] = [];
  events.on("pool:create", ({ workerPool }) => void starting.push(workerPool.id));
  const launch = async (): Promise<Running> => {
    starting = [];
    const runner = await options.start();
    return { runner, pools: starting, ended: false };
  };

  let stopped = false;
  let current = await launch();
  let restarting: Promise<void> | undefined;
  let wake = () => {};
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  const restart = async (dead: Running) => {
    // Its jobs stay locked by its pools: freed now, they run again (the stale-lock sweep frees them
    // later if the database is still away).
    await options.freePools(dead.pools).catch((error: unknown) => log.warn({ err: error, pools: dead.pools }, "could not free the jobs of the stopped worker yet"));
    for (let attempt = 0; !stopped; attempt++) {
      await pause(RESTART_MS[Math.min(attempt, RESTART_MS.length - 1)]!);
      if (stopped) return;
      try {
        current = await launch();
        watch(current);
        options.onState("ok");
        log.warn("job worker started again");
        return;
      } catch (error) {
        log.warn({ err: error }, "job worker could not be started again; retrying");
      }
    }
  };
  const giveUp = (running: Running, error: unknown) => {
    if (running.ended || stopped) return;
    running.ended = true;
    options.onState("error");
    log.error({ err: error }, "job worker stopped unexpectedly; starting a new one");
    // Its schedule (cron) is stopped; its pool is left to end if it can.
    running.runner.stop().catch(() => undefined);
    restarting = restart(running).finally(() => (restarting = undefined));
  };
  const watch = (running: Running) => {
    running.runner.promise.then(
      () => giveUp(running, new Error("the job runner ended")),
      (error: unknown) => giveUp(running, error),
    );
  };
  events.on("pool:fatalError", ({ workerPool, error }) => {
    if (current.pools.includes(workerPool.id)) giveUp(current, error);
  });
  watch(current);

  return {
    stop: async () => {
      stopped = true;
      wake();
      await restarting;
      if (!current.ended) {
        current.ended = true;
        await current.runner.stop();
      }
    },
  };
}
