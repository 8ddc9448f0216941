import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPglite } from "../../server/toolkit/db/pglite-open.ts";
import { root } from "../support/contract.ts";
import { databaseKind } from "../support/service.ts";
import { call, register, startPersona, until, type Proc } from "../resilience/support.ts";

// Issue 34, item 10: `persona backup` carries the image files of the `local` blob store with the
// database, and a backup restored into another data dir, served on another port, shows the
// avatars at that server's address and serves their bytes. What a backup leaves out (an S3 bucket,
// the memory store) it says; a backup made before (the database archive alone) still restores.
// The embedded kind only: PostgreSQL is backed up with pg_dump (docs/operations.md).

let work: string;
const procs: Proc[] = [];

function persona(args: string[], dataDir: string, env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, ["cli/persona.ts", ...args], {
      cwd: root,
      env: { ...process.env, PERSONA_DATA_DIR: dataDir, DATABASE_URL: "", EMBEDDED_DB_IN_MEMORY: "false", BLOB_STORE: "", LOG_LEVEL: "warn", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.once("exit", (code) => done({ code: code ?? 1, stdout, stderr }));
  });
}

const serve = async (dataDir: string) => {
  const proc = await startPersona(["serve"], { PERSONA_DATA_DIR: dataDir, DATABASE_URL: "", EMBEDDED_DB_IN_MEMORY: "false", BLOB_STORE: "", AUTO_AVATARS: "true", PUBLIC_BASE_URL: "" });
  procs.push(proc);
  return proc;
};

const bytesOf = async (url: string) => {
  const response = await fetch(url);
  expect(response.status, url).toBe(200);
  expect(response.headers.get("content-type")).toBe("image/png");
  return Buffer.from(await response.arrayBuffer());
};

const files = (dir: string) => (existsSync(dir) ? readdirSync(dir, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile()).map((entry) => entry.name).sort() : []);

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "persona-backup-images-"));
});
afterAll(async () => {
  for (const proc of procs) await proc.kill9();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe.skipIf(databaseKind !== "embedded")("persona backup / restore with the image files (embedded)", () => {
  it("carries the avatars, and a restore served on another port shows them at its own address with the same bytes", { timeout: 300_000 }, async () => {
    const source = join(work, "source");
    const server = await serve(source);
    const alice = await register(server.url);
    const created = await call(server.url, alice.auth, "POST", "/v1/personas", { name: "Keeper", instructions: "You keep the light.", greeting_message: "Hello" });
    expect(created.status).toBe(201);
    const personaId = created.body.id as string;
    const avatar = await until("the automatic avatar", async () => (await call(server.url, alice.auth, "GET", `/v1/personas/${personaId}`)).body.avatar_url as string | null);
    expect(avatar.startsWith(`${server.url}/v1/images/files/`)).toBe(true);
    const avatarBytes = await bytesOf(avatar);
    const image = await call(server.url, alice.auth, "POST", "/v1/images/generate", { prompt: "A lighthouse", style: "scene" });
    expect(image.status).toBe(200);
    const imageBytes = await bytesOf(image.body.url as string);

    // Taken by the running server, the image files with it.
    const file = join(work, "with-images.tar");
    const backup = await persona(["backup", file, "--json"], source);
    expect(backup.code, backup.stderr).toBe(0);
    expect(backup.stderr).toContain("asking the running server");
    expect(backup.stderr).toMatch(/with 2 image files/);
    expect(JSON.parse(backup.stdout)).toMatchObject({ file, online: true, images: { included: true, files: 2 } });
    await server.stop();

    const target = join(work, "target");
    const restored = await persona(["restore", file, "--json"], target);
    expect(restored.code, restored.stderr).toBe(0);
    expect(JSON.parse(restored.stdout)).toMatchObject({ images: { included: true, files: 2 } });
    expect(files(join(target, "blobs"))).toEqual(files(join(source, "blobs")));

    const moved = await serve(target);
    expect(moved.url).not.toBe(server.url);
    const read = await call(moved.url, alice.auth, "GET", `/v1/personas/${personaId}`);
    expect(read.status).toBe(200);
    expect(read.body.avatar_url).toBe(`${moved.url}${new URL(avatar).pathname}`);
    expect((await bytesOf(read.body.avatar_url as string)).equals(avatarBytes)).toBe(true);
    expect((await bytesOf(`${moved.url}${new URL(image.body.url as string).pathname}`)).equals(imageBytes)).toBe(true);
    await moved.stop();

    // Image files already there: --force, which replaces them with the backup's.
    writeFileSync(join(target, "blobs", "images", `${"f".repeat(32)}.png`), "left over");
    const fresh = join(work, "only-blobs");
    mkdirSync(join(fresh, "blobs", "images"), { recursive: true });
    writeFileSync(join(fresh, "blobs", "images", `${"f".repeat(32)}.png`), "left over");
    const refused = await persona(["restore", file], fresh);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("blobs is not empty: pass --force");
    const forced = await persona(["restore", "--force", file], target);
    expect(forced.code, forced.stderr).toBe(0);
    expect(files(join(target, "blobs"))).toEqual(files(join(source, "blobs")));

    // What a backup leaves out, it says.
    const s3 = await persona(["backup", join(work, "s3.tar"), "--json"], source, { BLOB_STORE: "s3", S3_BUCKET: "persona-images" });
    expect(s3.code, s3.stderr).toBe(0);
    expect(s3.stderr).toContain("no image files: the images are in the S3 bucket persona-images (BLOB_STORE=s3)");
    expect(JSON.parse(s3.stdout).images).toMatchObject({ included: false });
    const memory = await persona(["backup", join(work, "memory.tar")], source, { BLOB_STORE: "memory" });
    expect(memory.code, memory.stderr).toBe(0);
    expect(memory.stderr).toContain("BLOB_STORE=memory");
    const fromS3 = await persona(["restore", join(work, "s3.tar"), "--json"], join(work, "from-s3"));
    expect(fromS3.code, fromS3.stderr).toBe(0);
    expect(fromS3.stderr).toContain("no image files");
    expect(existsSync(join(work, "from-s3", "blobs"))).toBe(false);

    // A backup made before (PGlite's archive alone) restores the database and says what it lacks.
    const old = join(work, "old.tar.gz");
    const db = await openPglite(join(source, "db"));
    try {
      writeFileSync(old, Buffer.from(await (await db.dumpDataDir("gzip")).arrayBuffer()));
    } finally {
      await db.close();
    }
    const fromOld = await persona(["restore", "--force", old, "--json"], target);
    expect(fromOld.code, fromOld.stderr).toBe(0);
    expect(fromOld.stderr).toContain("holds the database only");
    expect(JSON.parse(fromOld.stdout).images).toMatchObject({ included: false });
    expect(files(join(target, "blobs"))).toEqual(files(join(source, "blobs")));
    expect(readFileSync(join(target, "blobs", "images", new URL(avatar).pathname.split("/").pop()!)).equals(avatarBytes)).toBe(true);

    // On PostgreSQL the commands refuse, and say the image files are to be copied beside the dump.
    const postgres = await persona(["backup", join(work, "pg.tar")], source, { DATABASE_URL: "postgres://persona@127.0.0.1:1/persona" });
    expect(postgres.code).toBe(1);
    expect(postgres.stderr).toContain("pg_dump");
    expect(postgres.stderr).toContain("copy the image files (PERSONA_DATA_DIR/blobs, or the S3 bucket)");
  });
});
