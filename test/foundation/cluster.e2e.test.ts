import { request } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { root } from "../support/contract.ts";
import { startAndWait, type RunningProcess } from "../support/processes.ts";
import { freePort } from "../support/ports.ts";
import { createTestDatabase, databaseKind, databaseSettings, type TestDatabase } from "../support/service.ts";

// `persona serve --processes 2` on the database kind under test: both processes answer on one port,
// and a credential revoked through one is refused by the other (on the embedded default through
// the primary's relay of notifications over cluster IPC, on PostgreSQL through NOTIFY).
let database: TestDatabase;
let server: RunningProcess;
let base: string;

beforeAll(async () => {
  database = await createTestDatabase();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const env = {
    PORT: String(port),
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    EMBEDDED_DB_IN_MEMORY: "true",
    ...(database.url ? databaseSettings(database.url) : { DATABASE_URL: "" }),
  };
  server = await startAndWait("node", [join(root, "cli/persona.ts"), "serve", "--processes", "2"], `${base}/readyz`, 180_000, env);
  // Ready when fresh connections, dealt to both processes in turn, are all answered ready.
  const deadline = Date.now() + 180_000;
  for (let ready = 0; ready < 4; ) {
    ready = (await call("GET", "/readyz").catch(() => ({ status: 0 }))).status === 200 ? ready + 1 : 0;
    if (Date.now() > deadline) throw new Error(`the processes did not all get ready:\n${server.output()}`);
    if (!ready) await new Promise((resolve) => setTimeout(resolve, 200));
  }
}, 240_000);

afterAll(async () => {
  await server?.stop();
  await database?.drop();
});

/** One request on a connection of its own: the primary deals connections out to the processes in turn. */
function call(method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method, headers: { ...headers, connection: "close" }, agent: false }, (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => (text += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode!, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe(`persona serve --processes 2 (${databaseKind})`, () => {
  it("serves from both processes, which share revocations", async () => {
    const suffix = `${Date.now()}`;
    const registered = await call("POST", "/v1/auth/register", { "content-type": "application/json" }, JSON.stringify({ email: `c${suffix}@example.com`, username: `c${suffix}`, password: "Correct-horse-9" }));
    expect(registered.status).toBe(201);
    const session = { authorization: `Bearer ${(JSON.parse(registered.body) as { access_token: string }).access_token}` };
    const created = await call("POST", "/v1/auth/api-keys", { ...session, "content-type": "application/json" }, JSON.stringify({ name: "k", scopes: ["admin"] }));
    expect(created.status).toBe(201);
    const { id, key } = JSON.parse(created.body) as { id: string; key: string };
    // Both processes resolve (and cache) the key.
    for (let i = 0; i < 6; i++) expect((await call("GET", "/v1/auth/me", { "x-api-key": key })).status).toBe(200);
    expect((await call("DELETE", `/v1/auth/api-keys/${id}`, session)).status).toBe(200);
    // Six refusals in a row, on fresh connections: each process refuses it.
    let refusedInARow = 0;
    const deadline = Date.now() + 10_000;
    while (refusedInARow < 6) {
      const status = (await call("GET", "/v1/auth/me", { "x-api-key": key })).status;
      refusedInARow = status === 401 ? refusedInARow + 1 : 0;
      if (Date.now() > deadline) throw new Error("a process still accepts the revoked key after 10 s");
    }
  }, 60_000);

  it("stops every process on SIGTERM", async () => {
    await server.stop();
    expect(server.child.exitCode ?? server.child.signalCode).not.toBeNull();
    await expect(call("GET", "/healthz")).rejects.toThrow();
  });
});
