import { describe, expect, it, vi } from "vitest";
import { workerStatus } from "../../server/toolkit/metrics/stall.ts";

// When /readyz calls a worker stalled (issue 39, item 5): a job it could run has waited longer than
// WORKER_STALL_MS while the worker started none in that time and runs none.

const STALL_MS = 120_000;

describe("workerStatus", () => {
  it("is ok without reading the queue while the worker started a job recently", async () => {
    const waited = vi.fn(async () => 10 * STALL_MS);
    expect(await workerStatus({ lastStartedAt: 1_000, running: 0 }, 1_000 + STALL_MS - 1, STALL_MS, waited)).toBe("ok");
    expect(waited).not.toHaveBeenCalled();
  });

  it("is ok while the worker runs a job, however long ago it started one", async () => {
    const waited = vi.fn(async () => 10 * STALL_MS);
    expect(await workerStatus({ lastStartedAt: 0, running: 2 }, 100 * STALL_MS, STALL_MS, waited)).toBe("ok");
    expect(waited).not.toHaveBeenCalled();
  });

  it("is ok when an idle worker has nothing due, or nothing due for long", async () => {
    expect(await workerStatus({ lastStartedAt: 0, running: 0 }, 10 * STALL_MS, STALL_MS, async () => 0)).toBe("ok");
    expect(await workerStatus({ lastStartedAt: 0, running: 0 }, 10 * STALL_MS, STALL_MS, async () => STALL_MS)).toBe("ok");
  });

  it("is stalled when a due job has waited longer than the limit and the worker started none in it", async () => {
    expect(await workerStatus({ lastStartedAt: 0, running: 0 }, 10 * STALL_MS, STALL_MS, async () => STALL_MS + 1)).toBe("stalled");
  });
});
