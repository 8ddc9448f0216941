import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CredentialCache } from "../../server/areas/auth/credential-cache.ts";
import { localNotifications } from "../../server/toolkit/db/notifications.ts";
import type { Principal } from "../../server/toolkit/http/principal.ts";
import { createLogger } from "../../server/toolkit/logger.ts";
import { createApiClient } from "../support/api.ts";
import { root } from "../support/contract.ts";
import { startAndWait, type RunningProcess } from "../support/processes.ts";
import { freePort } from "../support/ports.ts";
import { createTestDatabase, databaseSettings, startTestService, testDatabaseUrl, type TestDatabase, type TestService } from "../support/service.ts";
import { registerUser } from "../support/users.ts";

const log = createLogger({ logLevel: "silent", logPretty: false });
const principal = (userId: string, extra: Partial<Principal> = {}): Principal => ({ userId, kind: "session", scopes: "all", ...extra });
const entry = (p: Principal, now = 1_000) => ({ principal: p, validUntil: Infinity, cachedAt: now, touchedAt: now });
const listening = () => new Promise((resolve) => setImmediate(resolve));

describe("the credential cache", () => {
  it("serves a stored credential until it expires", async () => {
    const cache = new CredentialCache(localNotifications(), log);
    await listening();
    cache.store("t:a", { ...entry(principal("u1")), validUntil: 5_000 }, cache.begin());
    expect(cache.lookup("t:a", 4_999)?.principal.userId).toBe("u1");
    expect(cache.lookup("t:a", 5_000)).toBeUndefined();
  });

  it("drops a user's, a session's or a key's entries, and nothing else", async () => {
    const cache = new CredentialCache(localNotifications(), log);
    await listening();
    cache.store("t:s1", entry(principal("u1", { sessionId: "s1" })), cache.begin());
    cache.store("t:s2", entry(principal("u1", { sessionId: "s2" })), cache.begin());
    cache.store("k:k1", entry(principal("u2", { kind: "api_key", apiKeyId: "k1" })), cache.begin());
    cache.store("k:k2", entry(principal("u3", { kind: "api_key", apiKeyId: "k2" })), cache.begin());
    cache.drop({ sessionId: "s1" });
    cache.drop({ apiKeyId: "k1" });
    expect(["t:s1", "t:s2", "k:k1", "k:k2"].map((key) => Boolean(cache.lookup(key, 1_000)))).toEqual([false, true, false, true]);
    cache.drop({ userId: "u1" });
    expect(cache.lookup("t:s2", 1_000)).toBeUndefined();
    expect(cache.lookup("k:k2", 1_000)).toBeDefined();
  });

  it("does not keep a lookup that was under way when a revocation came", async () => {
    const cache = new CredentialCache(localNotifications(), log);
    await listening();
    const epoch = cache.begin();
    cache.drop({ userId: "someone else" });
    cache.store("t:late", entry(principal("u1")), epoch);
    expect(cache.lookup("t:late", 1_000)).toBeUndefined();
  });

  it("drops what another process revoked, as the notification says", async () => {
    const bus = localNotifications();
    const cache = new CredentialCache(bus, log);
    await listening();
    cache.store("t:x", entry(principal("u1", { sessionId: "s9" })), cache.begin());
    await bus.notify("credentials_revoked", JSON.stringify({ sessionId: "s9" }));
    await listening();
    expect(cache.lookup("t:x", 1_000)).toBeUndefined();
  });
});

describe("revocation with the cache in one process", () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => {
    await service?.close();
  });

  it("refuses a deleted key and a deleted account's session on the very next request", async () => {
    const user = await registerUser(service);
    const created = await service.clientFor(user).POST("/v1/auth/api-keys", { body: { name: "k", scopes: ["admin"] } });
    const { id, key } = created.data!;
    const me = (headers: Record<string, string>) => service.fetch("/v1/auth/me", { headers }).then((response) => response.status);
    // Twice each: the second answer comes from the cache.
    expect([await me({ "x-api-key": key }), await me({ "x-api-key": key }), await me(user.auth), await me(user.auth)]).toEqual([200, 200, 200, 200]);
    expect((await service.fetch(`/v1/auth/api-keys/${id}`, { method: "DELETE", headers: user.auth })).status).toBe(200);
    expect(await me({ "x-api-key": key })).toBe(401);
    expect(await me(user.auth)).toBe(200);
    expect((await service.fetch("/v1/auth/me", { method: "DELETE", headers: user.auth })).status).toBe(200);
    expect(await me(user.auth)).toBe(401);
  });
});

// Two API processes on one PostgreSQL database: a revocation in one reaches the other's cache by
// NOTIFY, long before the cache's own 30 s limit on an entry's age.
describe.runIf(testDatabaseUrl)("revocation across two API processes on PostgreSQL", () => {
  let database: TestDatabase;
  const processes: RunningProcess[] = [];
  beforeAll(async () => {
    database = await createTestDatabase();
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      const env = { ...databaseSettings(database.url!), PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn", WORKER_ENABLED: i === 0 ? "true" : "false" };
      // One at a time: the first applies the migrations.
      processes.push(await startAndWait("node", [join(root, "server/main.ts")], `http://127.0.0.1:${port}/readyz`, 120_000, env));
    }
  }, 240_000);
  afterAll(async () => {
    for (const process of processes) await process.stop();
    await database?.drop();
  });

  const call = (which: number, path: string, init: RequestInit = {}) => fetch(processes[which]!.url.replace("/readyz", path), init);
  /** The contract-typed client of process `which`. */
  const client = (which: number, auth: Record<string, string> = {}) => createApiClient(processes[which]!.url.replace("/readyz", ""), auth);
  /** Polls until `path` answers 401 on process `which`; how long that took (reported, not asserted). */
  async function refusedWithin(which: number, headers: Record<string, string>): Promise<number> {
    const started = performance.now();
    // Its own loop, not until(): every answer before the 401 must be a 200, and the time it reports
    // wants a finer grain than until's 50 ms.
    for (;;) {
      const status = (await call(which, "/v1/auth/me", { headers })).status;
      if (status === 401) return performance.now() - started;
      expect(status).toBe(200);
      if (performance.now() - started > 10_000) throw new Error("the other process still accepts the revoked credential after 10 s");
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  it("refuses a key deleted through the other process, and a deleted account's session", async () => {
    const registered = await client(0).POST("/v1/auth/register", {
      body: { email: `two_${Date.now()}@example.com`, username: `two_${Date.now()}`, password: "Correct-horse-9" },
    });
    const { access_token } = registered.data!;
    const session = { authorization: `Bearer ${access_token}` };
    const created = await client(0, session).POST("/v1/auth/api-keys", { body: { name: "k", scopes: ["admin"] } });
    const { id, key } = created.data!;
    for (const which of [0, 1]) {
      for (const headers of [{ "x-api-key": key }, session, { "x-api-key": key }, session]) expect((await call(which, "/v1/auth/me", { headers })).status).toBe(200);
    }
    expect((await call(0, `/v1/auth/api-keys/${id}`, { method: "DELETE", headers: session })).status).toBe(200);
    expect((await call(0, "/v1/auth/me", { headers: { "x-api-key": key } })).status).toBe(401);
    const keyMs = await refusedWithin(1, { "x-api-key": key });
    expect((await call(1, "/v1/auth/me", { method: "DELETE", headers: session })).status).toBe(200);
    expect((await call(1, "/v1/auth/me", { headers: session })).status).toBe(401);
    const sessionMs = await refusedWithin(0, session);
    console.log(`revocation reached the other process after ${keyMs.toFixed(1)} ms (key) and ${sessionMs.toFixed(1)} ms (session)`);
  }, 60_000);
});
