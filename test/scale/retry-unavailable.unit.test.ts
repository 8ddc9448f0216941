import { describe, expect, it } from "vitest";
import { retryWhileUnavailable } from "../../server/toolkit/db/retry-unavailable.ts";

// The end of a streamed reply waits out a failover (ADR 0374): written again while the database is
// unreachable, within a deadline; any other failure at once; and during a shutdown written once
// still, never skipped.
const cut = () => Object.assign(new Error("Connection terminated unexpectedly"), {});
const refused = () => Object.assign(new Error("duplicate key value violates unique constraint"), { code: "23505" });

function writer(failures: (() => Error)[]) {
  let calls = 0;
  return {
    calls: () => calls,
    write: async () => {
      calls++;
      const failure = failures.shift();
      if (failure) throw failure();
      return "stored";
    },
  };
}

describe("a write that waits out an unreachable database", () => {
  it("is written again while the database is unreachable, and answers the write's result", async () => {
    const seen: unknown[] = [];
    const { write, calls } = writer([cut, cut]);
    expect(await retryWhileUnavailable(write, { forMs: 10_000, onRetry: (error) => seen.push(error) })).toBe("stored");
    expect(calls()).toBe(3);
    expect(seen).toHaveLength(2);
  });

  it("fails at once on any other failure", async () => {
    const { write, calls } = writer([refused]);
    await expect(retryWhileUnavailable(write, { forMs: 10_000 })).rejects.toMatchObject({ code: "23505" });
    expect(calls()).toBe(1);
  });

  it("gives up with the last failure once its deadline has passed", async () => {
    const { write, calls } = writer(Array.from({ length: 50 }, () => cut));
    await expect(retryWhileUnavailable(write, { forMs: 600 })).rejects.toThrow("Connection terminated");
    // However slow the machine: it ends, having tried at most a few times in that time.
    expect(calls()).toBeGreaterThanOrEqual(1);
    expect(calls()).toBeLessThan(10);
  });

  it("is written once during a shutdown, and not again", async () => {
    const stopping = AbortSignal.abort();
    const once = writer([]);
    expect(await retryWhileUnavailable(once.write, { forMs: 10_000, signal: stopping })).toBe("stored");
    expect(once.calls()).toBe(1);
    const failing = writer([cut, cut]);
    await expect(retryWhileUnavailable(failing.write, { forMs: 10_000, signal: stopping })).rejects.toThrow("Connection terminated");
    expect(failing.calls()).toBe(1);
  });
});
