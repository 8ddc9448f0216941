import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startReplicatedPair, type ReplicatedPair } from "../support/replication.ts";
import { startTestService, testDatabaseUrl, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { sleep, until } from "../support/wait.ts";

// Read replicas (issue 38, item 2): lag-tolerant reads go to a hot standby, and a caller always
// reads its own writes, on any API process. The standby replays APPLY_DELAY_MS behind the primary
// (recovery_min_apply_delay), so which of the two answered shows in what a read sees. Runs once, in
// the PostgreSQL pass (it starts its own primary and standby with the same binaries).
const APPLY_DELAY_MS = 3_000;
const MAX_LAG_MS = 8_000;

describe.skipIf(!testDatabaseUrl)("reads on a replica", () => {
  let pair: ReplicatedPair;
  const services: TestService[] = [];

  beforeAll(async () => {
    pair = await startReplicatedPair({ applyDelayMs: APPLY_DELAY_MS });
    const admin = new pg.Client({ connectionString: pair.primaryUrl });
    await admin.connect();
    await admin.query("CREATE DATABASE persona_replicas");
    await admin.end();
    const url = (port: string) => {
      const target = new URL(port);
      target.pathname = "/persona_replicas";
      return target.toString();
    };
    const database = { url: url(pair.primaryUrl), drop: async () => {} };
    const env = { DATABASE_REPLICA_URLS: url(pair.replicaUrl), DATABASE_REPLICA_MAX_LAG_MS: String(MAX_LAG_MS) };
    // Two API processes on one primary and one replica, as `serve --processes 2` or two machines run them.
    services.push(await startTestService({ database, env }));
    services.push(await startTestService({ database, env }));
  }, 180_000);

  afterAll(async () => {
    for (const service of services) await service.stop().catch(() => undefined);
    await pair?.stop();
  });

  const explore = async (service: TestService, user: TestUser) => {
    const { data, error } = await service.clientFor(user).GET("/v1/personas/explore", { params: { query: { sort: "recent", limit: 100 } } });
    expect(error).toBeUndefined();
    return data!.data.map((persona) => persona.id);
  };
  const replicaUsed = (service: TestService) => service.services.db.reads!.status()[0]!.used;

  it("reads a caller's own write at once on every process, while others read the replica until it replays", async () => {
    const [first, second] = services as [TestService, TestService];
    const writer = await registerUser(first);
    const reader = await registerUser(second);
    // The replica is caught up within its apply delay, and the reader's registration is behind it.
    await until("the replica in use", () => replicaUsed(first) && replicaUsed(second), 60_000);
    await sleep(MAX_LAG_MS);

    const { data: persona, error } = await first.clientFor(writer).POST("/v1/personas", { body: { name: "Fresh", instructions: "Be brief.", is_public: true } });
    expect(error).toBeUndefined();
    // Its writer reads it at once, on the process that wrote and on the other.
    expect(await explore(first, writer)).toContain(persona!.id);
    expect(await explore(second, writer)).toContain(persona!.id);
    // Another caller's lag-tolerant read is the replica's: the persona is not there yet...
    expect(await explore(second, reader)).not.toContain(persona!.id);
    // ...and is once the replica has replayed it.
    await until("the replica replays the persona", async () => (await explore(second, reader)).includes(persona!.id), 60_000);
  }, 120_000);

  it("reads a new account at once: a sign-up is a write of its caller's, told by the token's issue time", async () => {
    const [first, second] = services as [TestService, TestService];
    await until("the replica in use", () => replicaUsed(first) && replicaUsed(second), 60_000);
    const fresh = await registerUser(first);
    // The replica has not replayed the account yet (it replays APPLY_DELAY_MS behind): the primary answers.
    const { response } = await second.clientFor(fresh).GET("/v1/social/profile/{user_id}", { params: { path: { user_id: fresh.id } } });
    expect(response.status).toBe(200);
  }, 120_000);

  it("answers every lag-tolerant operation from the replica without a write", async () => {
    const [service] = services as [TestService];
    const user = await registerUser(service);
    const other = await registerUser(service);
    await sleep(MAX_LAG_MS);
    const client = service.clientFor(user);
    for (const call of [
      () => client.GET("/v1/personas"),
      () => client.GET("/v1/personas/explore"),
      () => client.GET("/v1/conversations"),
      () => client.GET("/v1/conversations/search", { params: { query: { q: "hello" } } }),
      () => client.GET("/v1/marketplace"),
      () => client.GET("/v1/marketplace/featured"),
      () => client.GET("/v1/marketplace/categories"),
      () => client.GET("/v1/social/feed"),
      () => client.GET("/v1/social/profile/{user_id}", { params: { path: { user_id: other.id } } }),
      () => client.GET("/v1/social/followers"),
      () => client.GET("/v1/social/following"),
      () => client.GET("/v1/social/likes"),
      () => client.GET("/v1/social/search", { params: { query: { q: other.username } } }),
    ]) {
      const { response } = await call();
      expect(response.status, response.url).toBe(200);
    }
    expect(replicaUsed(service)).toBe(true);
  }, 120_000);
});
