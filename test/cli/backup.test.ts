import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { root } from "../support/contract.ts";
import { databaseKind } from "../support/service.ts";
import { call, register, startPersona, until, type Proc } from "../resilience/support.ts";

// `persona backup` and `persona restore` of the embedded default: a round trip from a data dir
// filled through the API into a fresh one, compared table by table (every table the catalog
// lists, with its row count and a hash of its rows). PostgreSQL is backed up with pg_dump
// (docs/operations.md), so this runs on the embedded kind only.

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

/** Row count and content hash of every table of the database in `dbDir`, from the catalog. */
async function tableDigests(dbDir: string): Promise<Record<string, { rows: number; hash: string }>> {
  const [{ PGlite }, { pg_trgm }, { vector }] = await Promise.all([
    import("@electric-sql/pglite"),
    import("@electric-sql/pglite/contrib/pg_trgm"),
    import("@electric-sql/pglite-pgvector"),
  ]);
  const db = await PGlite.create({ dataDir: dbDir, extensions: { vector, pg_trgm } });
  try {
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
  } finally {
    await db.close();
  }
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "persona-backup-"));
});
afterAll(async () => {
  for (const proc of procs) await proc.kill9();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe.skipIf(databaseKind !== "embedded")("persona backup / restore (embedded)", () => {
  it("round-trips every table, refuses a dir in use and asks for --force on a non-empty one", { timeout: 300_000 }, async () => {
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

    const file = join(work, "backup.tar.gz");
    const whileRunning = await persona(["backup", file], source);
    expect(whileRunning.code, whileRunning.stderr).toBe(1);
    expect(whileRunning.stderr).toContain("in use");
    expect(existsSync(file)).toBe(false);

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

    const [before, after] = [await tableDigests(join(source, "db")), await tableDigests(join(target, "db"))];
    expect(Object.keys(before).length).toBeGreaterThan(20);
    for (const table of ["public.users", "public.personas", "public.messages", "public.knowledge_chunks", "public.rooms"]) {
      expect(before[table]?.rows, table).toBeGreaterThan(0);
    }
    expect(after).toEqual(before);

    // The restored dir serves: Alice logs in to her data.
    const restoredServer = await startPersona(["serve"], { PERSONA_DATA_DIR: target, DATABASE_URL: "", EMBEDDED_DB_IN_MEMORY: "false" });
    procs.push(restoredServer);
    const got = await call(restoredServer.url, alice.auth, "GET", `/v1/personas/${personaId}`);
    expect(got.status).toBe(200);
    await restoredServer.stop();
  });
});
