import { spawn } from "node:child_process";
import { existsSync, lstatSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPglite } from "../../server/toolkit/db/pglite-open.ts";
import { root } from "../support/contract.ts";
import { databaseKind } from "../support/service.ts";
import { call, register, startPersona, until, type Proc } from "../resilience/support.ts";

// `persona backup` and `persona restore` of the embedded default: a round trip from a data dir
// filled through the API into a fresh one, compared table by table (every table the catalog
// lists, with its row count and a hash of its rows), and a backup taken by the running server
// while requests write. PostgreSQL is backed up with pg_dump (docs/operations.md), so this runs on
// the embedded kind only.

let work: string;
const procs: Proc[] = [];

function persona(args: string[], dataDir: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, ["cli/persona.ts", ...args], {
      cwd: root,
      env: { ...process.env, PERSONA_DATA_DIR: dataDir, DATABASE_URL: "", EMBEDDED_DB_IN_MEMORY: "false", LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.once("exit", (code) => done({ code: code ?? 1, stdout, stderr }));
  });
}

/** Runs `read` on the database in `dbDir`, opened on its own (no server on it). */
async function withDatabase<T>(dbDir: string, read: (db: import("@electric-sql/pglite").PGlite) => Promise<T>): Promise<T> {
  const db = await openPglite(dbDir);
  try {
    return await read(db);
  } finally {
    await db.close();
  }
}

/** Row count and content hash of every table of the database in `dbDir`, from the catalog. */
function tableDigests(dbDir: string): Promise<Record<string, { rows: number; hash: string }>> {
  return withDatabase(dbDir, async (db) => {
    const tables = await db.query<{ name: string }>(
      `SELECT quote_ident(schemaname) || '.' || quote_ident(tablename) AS name FROM pg_tables
        WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1`,
    );
    const digests: Record<string, { rows: number; hash: string }> = {};
    for (const { name } of tables.rows) {
      const result = await db.query<{ rows: number; hash: string }>(
        `SELECT count(*)::int AS rows, coalesce(md5(string_agg(t::text, E'\\n' ORDER BY t::text)), '') AS hash FROM ${name} t`,
      );
      digests[name] = result.rows[0]!;
    }
    return digests;
  });
}

/**
 * Conversations whose messages are not whole exchanges (a user message without its reply, or the
 * reverse). Greetings, stored at depth 0 when a conversation opens, are no exchange.
 */
function halfExchanges(dbDir: string): Promise<number> {
  return withDatabase(dbDir, async (db) => {
    const result = await db.query<{ half: number }>(
      `SELECT count(*)::int AS half FROM (SELECT conversation_id FROM messages WHERE depth > 0 GROUP BY conversation_id
         HAVING count(*) FILTER (WHERE role = 'user') <> count(*) FILTER (WHERE role = 'assistant')) t`,
    );
    return result.rows[0]!.half;
  });
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "persona-backup-"));
});
afterAll(async () => {
  for (const proc of procs) await proc.kill9();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe.skipIf(databaseKind !== "embedded")("persona backup / restore (embedded)", () => {
  it("round-trips every table, backs up a running server consistently, refuses a restore under it and asks for --force on a non-empty dir", { timeout: 300_000 }, async () => {
    const source = join(work, "source");
    const server = await startPersona(["serve"], { PERSONA_DATA_DIR: source, DATABASE_URL: "", EMBEDDED_DB_IN_MEMORY: "false" });
    procs.push(server);
    const alice = await register(server.url);
    const bob = await register(server.url);
    const created = await call(server.url, alice.auth, "POST", "/v1/personas", { name: "Keeper", instructions: "You keep things.", is_public: true });
    expect(created.status).toBe(201);
    const personaId = created.body.id as string;
    const conversation = await call(server.url, alice.auth, "POST", "/v1/conversations", { persona_id: personaId });
    expect((await call(server.url, alice.auth, "POST", `/v1/conversations/${conversation.body.id}/messages`, { content: "Hello there" })).status).toBe(201);
    const form = new FormData();
    form.append("file", new Blob(["Lighthouses guide ships along the coast at night.\n".repeat(40)]), "lights.txt");
    const uploaded = await fetch(`${server.url}/v1/knowledge/${personaId}/documents`, { method: "POST", headers: alice.auth, body: form });
    expect(uploaded.status).toBe(202);
    const documentId = ((await uploaded.json()) as { id: string }).id;
    await until("the document is ready", async () => (await call(server.url, alice.auth, "GET", `/v1/knowledge/${personaId}/documents/${documentId}`)).body.status === "ready");
    const room = await call(server.url, alice.auth, "POST", "/v1/rooms", { name: "Harbour", persona_ids: [personaId] });
    expect(room.status).toBe(201);
    expect((await call(server.url, alice.auth, "POST", `/v1/rooms/${room.body.id}/messages`, { content: "Ahoy" })).status).toBeLessThan(300);
    expect((await call(server.url, bob.auth, "POST", `/v1/users/${alice.id}/follow`)).status).toBeLessThan(500);

    // Online: the running server takes the archive while Bob keeps starting conversations and
    // sending in them (each exchange is stored in one transaction).
    const online = join(work, "online.tar.gz");
    let writing = true;
    const writer = (async () => {
      let exchanges = 0;
      while (writing && exchanges < 150) {
        const started = await call(server.url, bob.auth, "POST", "/v1/conversations", { persona_id: personaId });
        expect(started.status).toBe(201);
        const sent = await call(server.url, bob.auth, "POST", `/v1/conversations/${started.body.id}/messages`, { content: `Message ${exchanges}` });
        expect(sent.status).toBe(201);
        exchanges++;
      }
      return exchanges;
    })();
    const whileRunning = await persona(["backup", online, "--json"], source);
    expect(whileRunning.code, whileRunning.stderr).toBe(0);
    expect(whileRunning.stderr).toContain("asking the running server");
    expect(JSON.parse(whileRunning.stdout)).toMatchObject({ file: online, online: true });
    expect(whileRunning.stderr).toMatch(/wrote .* MB .*requests waited [0-9.]+ s/);
    expect(existsSync(`${online}.partial`)).toBe(false);
    writing = false;
    const exchanges = await writer;
    expect(exchanges).toBeGreaterThan(0);
    expect((await call(server.url, alice.auth, "GET", "/healthz")).status).toBe(200);
    const refusedRestore = await persona(["restore", "--force", online], source);
    expect(refusedRestore.code).toBe(1);
    expect(refusedRestore.stderr).toContain("in use");

    const file = join(work, "backup.tar.gz");
    await server.stop();
    const backup = await persona(["backup", file], source);
    expect(backup.code, backup.stderr).toBe(0);
    expect(backup.stderr).toMatch(/wrote .* MB/);

    const target = join(work, "target");
    const restored = await persona(["restore", file], target);
    expect(restored.code, restored.stderr).toBe(0);
    const again = await persona(["restore", file], target);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("--force");
    const broken = join(work, "broken.tar.gz");
    writeFileSync(broken, "not a backup");
    const refused = await persona(["restore", "--force", broken], target);
    expect(refused.code).toBe(1);
    const forced = await persona(["restore", "--force", file], target);
    expect(forced.code, forced.stderr).toBe(0);
    // Unpacked files are the owner's only, before any server starts on them (issue 31 M5).
    const open = readdirSync(join(target, "db"), { recursive: true, withFileTypes: true }).filter((entry) => lstatSync(join(entry.parentPath, entry.name)).mode & 0o077);
    expect(open.map((entry) => join(entry.parentPath, entry.name))).toEqual([]);
    expect(lstatSync(join(target, "db")).mode & 0o077).toBe(0);

    const [before, after] = [await tableDigests(join(source, "db")), await tableDigests(join(target, "db"))];
    expect(Object.keys(before).length).toBeGreaterThan(20);
    for (const table of ["public.users", "public.personas", "public.messages", "public.knowledge_chunks", "public.rooms"]) {
      expect(before[table]?.rows, table).toBeGreaterThan(0);
    }
    expect(after).toEqual(before);

    // The online archive restores to a database that opens, holds what was there before it was
    // asked for, at most what was written by the end, and no half exchange.
    const fromOnline = join(work, "from-online");
    const restoredOnline = await persona(["restore", online], fromOnline);
    expect(restoredOnline.code, restoredOnline.stderr).toBe(0);
    const onlineDigests = await tableDigests(join(fromOnline, "db"));
    for (const table of ["public.knowledge_chunks", "public.knowledge_documents"]) expect(onlineDigests[table], table).toEqual(before[table]);
    expect(onlineDigests["public.users"]!.rows).toBe(before["public.users"]!.rows);
    expect(before["public.conversations"]!.rows).toBe(1 + exchanges);
    expect(onlineDigests["public.conversations"]!.rows).toBeGreaterThanOrEqual(1);
    expect(onlineDigests["public.conversations"]!.rows).toBeLessThanOrEqual(before["public.conversations"]!.rows);
    expect(await halfExchanges(join(fromOnline, "db"))).toBe(0);

    // The restored dir serves: Alice logs in to her data.
    const restoredServer = await startPersona(["serve"], { PERSONA_DATA_DIR: target, DATABASE_URL: "", EMBEDDED_DB_IN_MEMORY: "false" });
    procs.push(restoredServer);
    const got = await call(restoredServer.url, alice.auth, "GET", `/v1/personas/${personaId}`);
    expect(got.status).toBe(200);
    await restoredServer.stop();
  });
});
