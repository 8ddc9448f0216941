import { describe, expect, it } from "vitest";
import { fixtureKey } from "../fuzz/cases.ts";
import type { FuzzOperation } from "../fuzz/contract.ts";
import { problemsOf } from "../fuzz/judge.ts";
import { call, deletionsLast, leaksOf, scopedOperations, useWorld, validRequest } from "./support.ts";

// API1 Broken Object Level Authorization, from the contract (issue 23 item 2): user B (a stranger
// to user A: no shared room, no follow) calls every operation that names a resource in its path
// with A's resources, and every read with B's own. B never gets A's data: the answer is 404 (or the
// 403 the contract declares), its body carries no trace of A's private data, and A's resources read
// the same afterwards.
const fixture = useWorld({ strangers: true });

/**
 * Path fixtures that are public by design, so another user acting on them is the feature, not a
 * breach: a published listing (the marketplace), and users (profiles, follows, room membership by
 * user id). Operations whose path holds only these are left out of the 404 rule.
 */
const PUBLIC_BY_DESIGN: Record<string, string> = {
  marketplace: "a published marketplace listing is public",
  user_id: "users are public identities: profiles, follows, members",
};

const pathKeys = (op: FuzzOperation) => op.parameters.filter((p) => p.in === "path").map((p) => fixtureKey(op.path, p.name));
const withPrivatePathIds = scopedOperations.filter((op) => pathKeys(op).some((key) => !PUBLIC_BY_DESIGN[key]));
const reads = scopedOperations.filter((op) => op.method === "GET");

/** A's resources as A reads them: every GET whose path A's fixtures fill, except logs that change by themselves. */
async function snapshotOfA(): Promise<Record<string, string>> {
  const { service, world } = fixture;
  const out: Record<string, string> = {};
  for (const op of reads) {
    const keys = pathKeys(op);
    if (keys.some((key) => PUBLIC_BY_DESIGN[key] || !world.a.values[key]) || op.path.includes("deliveries") || op.operationId === "studio_analytics") continue;
    const answer = await call(service, validRequest(op, world.a, world.a.user.auth));
    // A page's query is drawn at random; the snapshot is of the plain path.
    out[op.operationId] = `${answer.status} ${answer.text}`;
  }
  return out;
}

describe("API1: another user's objects", () => {
  it("covers every operation with a private resource in its path", () => {
    expect(withPrivatePathIds.length).toBeGreaterThan(30);
  });

  it("are 404 (or the declared 403) to a stranger on every operation that names one, never data, and are left unchanged", async () => {
    const { service, world } = fixture;
    const before = await snapshotOfA();
    const breaches: string[] = [];
    let refused = 0;
    for (const op of deletionsLast(withPrivatePathIds)) {
      for (const seed of [1, 2]) {
        // Without an Idempotency-Key: a key B used before answers 409 before any ownership check.
        const { "idempotency-key": _key, ...headers } = validRequest(op, world.a, world.b.user.auth, seed).headers;
        const request = { ...validRequest(op, world.a, world.b.user.auth, seed), headers };
        // A's path ids, but the user ids in the path are A's own (the victim), not B's.
        const path = request.path.replaceAll(world.b.user.id, world.a.user.id);
        const answer = await call(service, { ...request, path });
        const allowed = op.statuses.includes("404") ? ["404", ...(op.statuses.includes("403") ? ["403"] : [])] : op.statuses.filter((s) => s < "500");
        const notLive = answer.status === 501 && answer.text.includes("not_implemented");
        if (answer.status === 404 || answer.status === 403) refused++;
        if (!notLive && !allowed.includes(String(answer.status))) breaches.push(`${op.operationId} ${op.method} ${path} -> ${answer.status} ${answer.text.slice(0, 200)}`);
        const leaks = leaksOf(world.a, answer.text);
        if (leaks.length) breaches.push(`${op.operationId} shows A's ${leaks.join(", ")}`);
        breaches.push(...problemsOf(op.operationId, answer).map((p) => `${op.operationId}: ${p}`));
      }
    }
    expect(breaches).toEqual([]);
    expect(refused).toBeGreaterThan(withPrivatePathIds.length);
    expect(await snapshotOfA()).toEqual(before);
  }, 300_000);

  it("never appear in what a stranger lists, searches or reads of their own", async () => {
    const { service, world } = fixture;
    const leaks: string[] = [];
    for (const op of reads) {
      const request = validRequest(op, world.b, world.b.user.auth, 3);
      // Searches look for A's marker: a stranger must find nothing of A's.
      const path = request.path.replace(/([?&]q=)[^&]*/, `$1${world.a.marker}`);
      const answer = await call(service, { ...request, path: path.includes("?") || !op.parameters.some((p) => p.name === "q") ? path : `${path}?q=${world.a.marker}` });
      const found = leaksOf(world.a, answer.text);
      if (found.length) leaks.push(`${op.operationId} ${path} -> ${answer.status} shows ${found.join(", ")}`);
    }
    expect(leaks).toEqual([]);
  }, 300_000);
});
