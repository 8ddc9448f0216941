import type { TaskList } from "graphile-worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../server/toolkit/config.ts";
import { startService } from "../../server/runtime.ts";
import { databaseKind, startTestService, type TestService } from "../support/service.ts";

// Background work (e-mails, purges, indexing) must run once queued, survive a failure, and scale out to worker processes.
async function waitFor<T>(check: () => T | undefined | Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((wait) => setTimeout(wait, 50));
  }
}

describe(`jobs on the ${databaseKind} database`, () => {
  const seen: Record<string, unknown>[] = [];
  const flakyAttempts: { at: number; attempts: number }[] = [];
  const tasks: TaskList = {
    test_record: async (payload) => {
      seen.push(payload as Record<string, unknown>);
    },
    test_flaky: async (_payload, helpers) => {
      flakyAttempts.push({ at: Date.now(), attempts: helpers.job.attempts });
      if (flakyAttempts.length === 1) throw new Error("first attempt fails on purpose");
    },
  };
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ extraTasks: tasks });
  });

  afterAll(async () => {
    await service?.close();
  });

  it("runs a queued job on the in-process worker", async () => {
    const { id } = await service.services.jobs.add("test_record", { hello: "world", n: 1 });
    expect(id).toMatch(/^\d+$/);
    const payload = await waitFor(() => seen.find((p) => p.hello === "world"), 10_000, "the job to run");
    expect(payload).toEqual({ hello: "world", n: 1 });
  });

  it("retries a failed job with backoff until it succeeds", { timeout: 20_000 }, async () => {
    const { id } = await service.services.jobs.add("test_flaky", {}, { maxAttempts: 3 });
    const { knex } = service.services.db;
    const jobRow = async () =>
      (await knex.raw<{ rows: { attempts: number; last_error: string | null }[] }>(
        "select attempts, last_error from graphile_worker.jobs where id = ?",
        [id],
      )).rows[0];
    // Between the attempts the queue holds the failure.
    const failed = await waitFor(async () => ((await jobRow())?.last_error ? jobRow() : undefined), 5_000, "the first failure");
    expect(failed).toMatchObject({ attempts: 1, last_error: expect.stringContaining("first attempt fails on purpose") });
    await waitFor(() => (flakyAttempts.length >= 2 ? true : undefined), 15_000, "the retry");
    const [first, second] = flakyAttempts;
    expect(first!.attempts).toBe(1);
    expect(second!.attempts).toBe(2);
    // graphile-worker waits e^attempts seconds: about 2.7 s after the first failure.
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(2_000);
    // A job that succeeds leaves the queue, and is not run a third time.
    await waitFor(async () => ((await jobRow()) ? undefined : true),
      5_000,
      "the job to leave the queue",
    );
    expect(flakyAttempts).toHaveLength(2);
  });
});

describe("`persona serve --no-worker` next to `persona worker`", () => {
  it("queues on the API process and runs on the worker-only process", async () => {
    const api = await startTestService({ env: { WORKER_ENABLED: "false" } });
    try {
      expect(api.services.health.worker).toBe("disabled");
      const ran: Record<string, unknown>[] = [];
      await api.services.jobs.add("test_split", { from: "api" });
      // Nothing runs the job while no worker shares the database.
      await new Promise((wait) => setTimeout(wait, 500));
      const pending = await api.services.db.knex.raw<{ rows: { attempts: number }[] }>(
        "select attempts from graphile_worker.jobs where task_identifier = 'test_split'",
      );
      expect(pending.rows).toEqual([{ attempts: 0 }]);

      const config = loadConfig({
        PORT: "0",
        LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
        DATABASE_URL: api.services.db.url,
        WORKER_POLL_INTERVAL_MS: "100",
      });
      const worker = await startService(config, {
        http: false,
        extraTasks: { test_split: async (payload) => void ran.push(payload as Record<string, unknown>) },
      });
      try {
        expect(worker.server).toBeUndefined();
        expect(worker.url).toBe("");
        const payload = await waitFor(() => ran[0], 10_000, "the worker-only process to run the job");
        expect(payload).toEqual({ from: "api" });
      } finally {
        await worker.stop();
      }
    } finally {
      await api.close();
    }
  });
});
