import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { copiedColumns, readSequences, readTables, type Queryable } from "../../cli/internals/db-move-catalog.ts";
import { openPglite } from "../../server/toolkit/db/pglite-open.ts";
import { call, startPersona, until, type Proc } from "../resilience/support.ts";
import { root } from "../support/contract.ts";
import { testDatabaseUrl } from "../support/service.ts";

// `persona db move` (issue 38, item 4): a data dir of the embedded default filled through the API
// (accounts, an API key, a persona, a conversation, a knowledge document with its vectors, a room,
// a webhook with deliveries queued as jobs) is moved into an empty PostgreSQL database, compared
// table by table here (every row's md5, sorted, independently of the command's own check), and the
// service started on PostgreSQL serves it: login, the conversation, a new message, a knowledge
// search, a room post (whose sequence must have been advanced). Needs a PostgreSQL server
// (TEST_DATABASE_URL) for the target; the source is always the embedded database.

let work: string;
const procs: Proc[] = [];
const targets: string[] = [];

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: testDatabaseUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** An empty database on the test server (pgvector available there, not created). */
async function emptyDatabase(): Promise<string> {
  const name = `persona_move_${Math.random().toString(16).slice(2, 10)}`;
  await admin(`CREATE DATABASE ${name}`);
  targets.push(name);
  const url = new URL(testDatabaseUrl!);
  url.pathname = `/${name}`;
  return url.toString();
}

function persona(args: string[], dataDir: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, ["cli/persona.ts", ...args], {
      cwd: root,
      env: { ...process.env, PERSONA_DATA_DIR: dataDir, DATABASE_URL: "", DATABASE_POOLER: "", DATABASE_LISTEN_URL: "", EMBEDDED_DB_IN_MEMORY: "false", LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.once("exit", (code) => done({ code: code ?? 1, stdout, stderr }));
  });
}

/**
 * Every table's row count and a hash of its rows' md5s, sorted here (the command sums them in the
 * database instead), over the columns a move copies (generated ones are the target's own).
 */
async function digests(db: Queryable): Promise<Record<string, { rows: number; hash: string }>> {
  await db.query("BEGIN");
  for (const setting of ["SET LOCAL TimeZone = 'UTC'", "SET LOCAL DateStyle = 'ISO, YMD'", "SET LOCAL extra_float_digits = 1"]) await db.query(setting);
  const out: Record<string, { rows: number; hash: string }> = {};
  for (const table of await readTables(db)) {
    const { rows } = await db.query<{ h: string }>(`SELECT md5(ROW(${copiedColumns(table).map((c) => c.name).join(", ")})::text) AS h FROM ${table.qualified}`);
    out[table.qualified] = { rows: rows.length, hash: createHash("sha256").update(rows.map((r) => r.h).sort().join("\n")).digest("hex") };
  }
  await db.query("COMMIT");
  return out;
}

/** The digests of every table and where every sequence stands. */
async function state(db: Queryable) {
  return { tables: await digests(db), sequences: await readSequences(db) };
}

async function embeddedState(dbDir: string) {
  const db = await openPglite(dbDir);
  try {
    return await state(db);
  } finally {
    await db.close();
  }
}

async function postgresState(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await state({ query: async <T,>(sql: string) => (await client.query(sql)) as unknown as { rows: T[] } });
  } finally {
    await client.end();
  }
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "persona-move-"));
});
afterAll(async () => {
  for (const proc of procs) await proc.kill9();
  for (const name of targets) await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
  if (work) rmSync(work, { recursive: true, force: true });
});

describe.runIf(testDatabaseUrl)("persona db move (embedded to PostgreSQL)", () => {
  it("copies every table, verifies it, refuses a running server and a non-empty target, and the service serves the moved data", { timeout: 300_000 }, async () => {
    const source = join(work, "source");
    const env = { PERSONA_DATA_DIR: source, DATABASE_URL: "", DATABASE_POOLER: "", DATABASE_LISTEN_URL: "", EMBEDDED_DB_IN_MEMORY: "false", WEBHOOKS_ALLOW_PRIVATE_URLS: "true" };
    const server = await startPersona(["serve"], env);
    procs.push(server);
    const email = `mover_${Math.random().toString(16).slice(2, 10)}@example.com`;
    const password = "Correct-horse-9";
    const registered = await call(server.url, {}, "POST", "/v1/auth/register", { email, username: email.split("@")[0], password });
    expect(registered.status).toBe(201);
    const alice = { id: registered.body.user.id as string, auth: { authorization: `Bearer ${registered.body.access_token}` } };
    const bobRegistered = await call(server.url, {}, "POST", "/v1/auth/register", { email: `b${email}`, username: `b${email.split("@")[0]}`, password });
    const bob = { auth: { authorization: `Bearer ${bobRegistered.body.access_token}` } };
    const key = await call(server.url, alice.auth, "POST", "/v1/auth/api-keys", { name: "moved key", scopes: ["admin"] });
    expect(key.status).toBe(201);
    const created = await call(server.url, alice.auth, "POST", "/v1/personas", { name: "Keeper", instructions: "You keep lighthouses.", is_public: true });
    expect(created.status).toBe(201);
    const personaId = created.body.id as string;
    // The webhook's deliveries to a closed port stay queued as jobs (graphile-worker's tables).
    expect((await call(server.url, alice.auth, "POST", "/v1/webhooks", { url: "http://127.0.0.1:9/hook", events: ["message.created"] })).status).toBe(201);
    const conversation = await call(server.url, alice.auth, "POST", "/v1/conversations", { persona_id: personaId });
    const conversationId = conversation.body.id as string;
    expect((await call(server.url, alice.auth, "POST", `/v1/conversations/${conversationId}/messages`, { content: "Where is the lamp kept?" })).status).toBe(201);
    const form = new FormData();
    form.append("file", new Blob(["Lighthouses guide ships along the coast at night with a rotating lamp.\n".repeat(40)]), "lights.txt");
    const uploaded = await fetch(`${server.url}/v1/knowledge/${personaId}/documents`, { method: "POST", headers: alice.auth, body: form });
    expect(uploaded.status).toBe(202);
    const documentId = ((await uploaded.json()) as { id: string }).id;
    await until("the document is ready", async () => (await call(server.url, alice.auth, "GET", `/v1/knowledge/${personaId}/documents/${documentId}`)).body.status === "ready");
    const room = await call(server.url, alice.auth, "POST", "/v1/rooms", { name: "Harbour", persona_ids: [personaId] });
    expect(room.status).toBe(201);
    expect((await call(server.url, alice.auth, "POST", `/v1/rooms/${room.body.id}/messages`, { content: "Ahoy" })).status).toBeLessThan(300);
    expect((await call(server.url, bob.auth, "POST", `/v1/social/follow/${alice.id}`)).status).toBeLessThan(300);

    const target = await emptyDatabase();
    const whileRunning = await persona(["db", "move", "--to", target], source);
    expect(whileRunning.code).toBe(1);
    expect(whileRunning.stderr).toContain("stop the server first");
    await server.stop();

    const { tables: before, sequences } = await embeddedState(join(source, "db"));
    const moved = await persona(["db", "move", "--to", target, "--json"], source);
    expect(moved.code, moved.stderr).toBe(0);
    const result = JSON.parse(moved.stdout) as { database_url: string; rows: number; tables: { table: string; rows: number }[]; blobs: string };
    expect(result.database_url).toBe(target);
    expect(result.blobs).toContain(join(source, "blobs"));
    expect(moved.stderr).toContain("verifying");

    // Table by table, every table of the embedded database, as this test reads them on both sides.
    const { tables: after, sequences: targetSequences } = await postgresState(target);
    expect(Object.keys(before).length).toBeGreaterThan(40);
    for (const table of ["public.users", "public.api_keys", "public.personas", "public.messages", "public.knowledge_chunks", "public.rooms", "public.webhooks", "public.instance_secrets", "graphile_worker._private_jobs"]) {
      expect(before[table]?.rows, table).toBeGreaterThan(0);
    }
    for (const [table, digest] of Object.entries(before)) expect(after[table], table).toEqual(digest);
    expect(result.tables.length).toBe(Object.keys(before).length);
    // Sequences (serial and identity columns, graphile-worker's job ids) stand where they stood.
    expect(sequences.filter((s) => s.isCalled).length).toBeGreaterThan(0);
    expect(targetSequences).toEqual(sequences);
    // The data dir is left as it was.
    expect(await embeddedState(join(source, "db"))).toEqual({ tables: before, sequences });

    const again = await persona(["db", "move", "--to", target], source);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("is not empty");

    // The service on PostgreSQL serves the moved data.
    const moved2 = await startPersona(["serve"], { ...env, DATABASE_URL: target });
    procs.push(moved2);
    const login = await call(moved2.url, {}, "POST", "/v1/auth/login", { email, password });
    expect(login.status).toBe(200);
    const auth = { authorization: `Bearer ${login.body.access_token}` };
    const history = await call(moved2.url, auth, "GET", `/v1/conversations/${conversationId}/messages`);
    expect(history.status).toBe(200);
    expect(JSON.stringify(history.body)).toContain("Where is the lamp kept?");
    expect((await call(moved2.url, auth, "POST", `/v1/conversations/${conversationId}/messages`, { content: "And on PostgreSQL?" })).status).toBe(201);
    const search = await call(moved2.url, auth, "POST", `/v1/knowledge/${personaId}/query`, { query: "rotating lamp" });
    expect(search.status).toBe(200);
    expect(search.body.results.length).toBeGreaterThan(0);
    expect((await call(moved2.url, auth, "POST", `/v1/rooms/${room.body.id}/messages`, { content: "Still here" })).status).toBeLessThan(300);
    expect((await call(moved2.url, { "x-api-key": key.body.key as string }, "GET", "/v1/personas")).status).toBe(200);
    expect((await call(moved2.url, auth, "GET", "/v1/webhooks")).body.data.length).toBe(1);
    await moved2.stop();
  });
});
