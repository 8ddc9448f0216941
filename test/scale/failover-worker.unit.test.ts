import { EventEmitter } from "node:events";
import type { Runner, WorkerEvents, WorkerPool } from "graphile-worker";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createLogger } from "../../server/toolkit/logger.ts";
import { superviseRunner } from "../../server/toolkit/jobs/supervised-runner.ts";

// The job worker across a failover: graphile-worker 0.18 gives up its worker pool when a batch of
// job completions or failures meets a cut connection (graphile/worker#636), and that pool's
// shutdown may never end. The supervisor starts a new runner in the same process, after freeing the
// jobs the given-up pools held. Runners here are stand-ins: the real one is run against the
// Patroni cluster by test/scale/failover.e2e.test.ts.

const log = createLogger({ logLevel: "silent", logPretty: false });

interface FakeRunner {
  runner: Runner;
  poolId: string;
  end: (error?: Error) => void;
  stopped: number;
}

function fakes(events: WorkerEvents) {
  const made: FakeRunner[] = [];
  let failures = 0;
  return {
    made,
    failNextStarts: (n: number) => (failures = n),
    start: async (): Promise<Runner> => {
      if (failures > 0) {
        failures--;
        throw new Error("connection refused");
      }
      const poolId = `pool-${made.length + 1}`;
      // graphile-worker creates the runner's pool while `run()` runs.
      events.emit("pool:create", { workerPool: { id: poolId } as WorkerPool } as never);
      let end!: (error?: Error) => void;
      const promise = new Promise<void>((resolve, reject) => (end = (error) => (error ? reject(error) : resolve())));
      const fake: FakeRunner = { poolId, end, stopped: 0, runner: undefined as unknown as Runner };
      fake.runner = { promise, stop: async () => void fake.stopped++ } as unknown as Runner;
      made.push(fake);
      return fake.runner;
    },
  };
}

function supervised() {
  const events: WorkerEvents = new EventEmitter();
  const runners = fakes(events);
  const freed: string[][] = [];
  const states: string[] = [];
  const started = superviseRunner({ events, log, start: runners.start, freePools: async (ids) => void freed.push([...ids]), onState: (state) => void states.push(state) });
  return { events, runners, freed, states, started };
}

const fatal = (events: WorkerEvents, poolId: string) => events.emit("pool:fatalError", { workerPool: { id: poolId } as WorkerPool, error: new Error("Connection terminated unexpectedly"), action: "failJob" } as never);

describe("the job worker's supervisor", () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it("starts a new runner when the pool reports a fatal error, after freeing its jobs", async () => {
    const { events, runners, freed, states, started } = supervised();
    const worker = await started;
    fatal(events, "pool-1");
    expect(states).toEqual(["error"]);
    // The given-up runner's schedule is stopped; its pool is left to end if it can.
    expect(runners.made[0]!.stopped).toBe(1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(freed).toEqual([["pool-1"]]);
    expect(runners.made).toHaveLength(2);
    expect(states).toEqual(["error", "ok"]);
    // A late error of the old pool changes nothing.
    fatal(events, "pool-1");
    runners.made[0]!.end(new Error("late"));
    await vi.advanceTimersByTimeAsync(60_000);
    expect(runners.made).toHaveLength(2);
    await worker.stop();
    expect(runners.made[1]!.stopped).toBe(1);
  });

  it("starts a new runner when the runner ends on its own, retrying while the database is away", async () => {
    const { runners, states, started } = supervised();
    const worker = await started;
    runners.failNextStarts(2);
    runners.made[0]!.end(new Error("worker pool exited with error"));
    await vi.advanceTimersByTimeAsync(1_000 + 2_000);
    expect(runners.made).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(runners.made).toHaveLength(2);
    expect(states).toEqual(["error", "ok"]);
    await worker.stop();
  });

  it("starts nothing more once stopped, even while waiting to restart", async () => {
    const { events, runners, states, started } = supervised();
    const worker = await started;
    fatal(events, "pool-1");
    await worker.stop();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(runners.made).toHaveLength(1);
    expect(states).toEqual(["error"]);
  });

  it("stops the runner once when it is stopped on purpose, and does not restart it", async () => {
    const { runners, states, started } = supervised();
    const worker = await started;
    await worker.stop();
    runners.made[0]!.end();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(runners.made[0]!.stopped).toBe(1);
    expect(runners.made).toHaveLength(1);
    expect(states).toEqual([]);
  });
});
