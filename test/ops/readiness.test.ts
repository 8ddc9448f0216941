import { EventEmitter } from "node:events";
import type { WorkerEvents } from "graphile-worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { longestDueWaitMs, watchWorker } from "../../server/toolkit/metrics/jobs.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { until } from "../support/wait.ts";

// /readyz judges a worker by its progress (issue 39, item 5): a job it could run that has waited
// longer than WORKER_STALL_MS while it started none and runs none makes it `stalled` (503). The
// service runs no worker of its own; the test plays one that never takes its job, through the same
// events a graphile-worker runner emits.

const TASK = "readiness_probe_task";
let service: TestService;

beforeAll(async () => {
  service = await startTestService({ fresh: true, env: { WORKER_ENABLED: "false", WORKER_STALL_MS: "1000" } });
});
afterAll(async () => {
  await service?.close();
});

async function readyz(): Promise<{ status: number; body: { status: string; checks: Record<string, string> } }> {
  const response = await service.fetch("/readyz");
  return { status: response.status, body: (await response.json()) as { status: string; checks: Record<string, string> } };
}

describe("the worker check of /readyz", () => {
  it("reads how long a job of the worker's tasks has been due, and no other task's", async () => {
    const { knex } = service.services.db;
    expect(await longestDueWaitMs(knex, [TASK])).toBe(0);
    await service.services.jobs.add("readiness_other_task", {}, { runAt: new Date(Date.now() - 60_000) });
    expect(await longestDueWaitMs(knex, [TASK])).toBe(0);
    expect(await longestDueWaitMs(knex, ["readiness_other_task"])).toBeGreaterThan(50_000);
    // One not due yet is no one's to start.
    await service.services.jobs.add(TASK, {}, { runAt: new Date(Date.now() + 60_000) });
    expect(await longestDueWaitMs(knex, [TASK])).toBe(0);
  });

  it("says `stalled` while a due job waits and the worker starts none, and `ok` once it does", async () => {
    expect(await readyz()).toEqual({ status: 200, body: { status: "ready", checks: { database: "ok", worker: "disabled" } } });
    const events: WorkerEvents = new EventEmitter();
    service.services.health.worker = "ok";
    watchWorker(service.services, events, [TASK]);
    await service.services.jobs.add(TASK, {}, { runAt: new Date(Date.now() - 5_000) });
    const stalled = await until("the worker reported stalled", async () => {
      const answer = await readyz();
      return answer.status === 503 ? answer : undefined;
    });
    expect(stalled.body).toEqual({ status: "not_ready", checks: { database: "ok", worker: "stalled" } });

    // A job started: the worker is working (a long job is not a stall).
    const job = { id: "1", task_identifier: TASK, attempts: 1, max_attempts: 25 };
    events.emit("job:start", { job } as never);
    expect(await readyz()).toEqual({ status: 200, body: { status: "ready", checks: { database: "ok", worker: "ok" } } });
    events.emit("job:complete", { job } as never);
    // Just started one: ok, until the job has waited WORKER_STALL_MS again with nothing started.
    expect((await readyz()).body.checks.worker).toBe("ok");
  });

  it("says `error` once the worker stopped", async () => {
    service.services.health.worker = "error";
    expect(await readyz()).toEqual({ status: 503, body: { status: "not_ready", checks: { database: "ok", worker: "error" } } });
  });
});
