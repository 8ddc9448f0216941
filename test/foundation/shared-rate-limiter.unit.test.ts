import { RateLimiterMemory } from "rate-limiter-flexible";
import { describe, expect, it, vi } from "vitest";
import { SharedRateLimiter } from "../../server/toolkit/http/shared-rate-limiter.ts";

// The limit is shared through the database, so the database must not take one write per request.
describe("the batched shared rate limiter", () => {
  it("counts far from the limit locally and writes the store in batches", async () => {
    const store = new RateLimiterMemory({ points: 1000, duration: 60 });
    const writes = vi.spyOn(store, "consume");
    const limiter = new SharedRateLimiter(store, { points: 1000, flushMs: 60_000 });
    for (let i = 0; i < 200; i++) expect((await limiter.consume("client")).allowed).toBe(true);
    expect(writes.mock.calls.length).toBeLessThan(5);
    await limiter.stop();
    expect((await store.get("client"))?.consumedPoints).toBe(200);
  });

  it("is exact near the limit: the request after the last allowed one is refused", async () => {
    const store = new RateLimiterMemory({ points: 120, duration: 60 });
    const limiter = new SharedRateLimiter(store, { points: 120, flushMs: 60_000 });
    const decisions = [];
    for (let i = 0; i < 125; i++) decisions.push(await limiter.consume("client"));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(120);
    expect(decisions[119]).toMatchObject({ allowed: true, remaining: 0 });
    expect(decisions[120]!.allowed).toBe(false);
    expect(decisions.map((d) => d.remaining).slice(0, 5)).toEqual([119, 118, 117, 116, 115]);
    await limiter.stop();
  });

  it("sees what another process counted once it has flushed", async () => {
    const store = new RateLimiterMemory({ points: 1000, duration: 60 });
    const a = new SharedRateLimiter(store, { points: 1000, flushMs: 60_000 });
    const b = new SharedRateLimiter(store, { points: 1000, flushMs: 60_000 });
    for (let i = 0; i < 300; i++) await a.consume("client");
    await a.flushAll();
    expect((await b.consume("client")).remaining).toBe(1000 - 301);
    await Promise.all([a.stop(), b.stop()]);
  });
});
