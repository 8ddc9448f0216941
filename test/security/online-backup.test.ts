import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "../../server/toolkit/db/embedded.ts";
import { fetchOnlineBackup, type BackupEndpoint } from "../../server/toolkit/db/online-backup.ts";
import { databaseKind } from "../support/service.ts";

// Issue 31 M6: a client of the online-backup port that connected and closed at once took the
// server down (ERR_STREAM_WRITE_AFTER_END, uncaught, in the database's thread). Whatever a client
// of that port does, the database and its backups go on.

let work: string;
let embedded: EmbeddedPostgres;
let endpoint: BackupEndpoint;

beforeAll(async () => {
  if (databaseKind !== "embedded") return;
  work = mkdtempSync(join(tmpdir(), "persona-online-backup-"));
  embedded = await startEmbeddedPostgres(join(work, "db"));
  endpoint = embedded.backup!;
}, 120_000);

afterAll(async () => {
  await embedded?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

/**
 * Connects to the backup port, sends `chunks` (each after the last was written), then closes as
 * told: `end` (FIN at once), `reset` (RST at once) or `read` (waits for the server to close).
 * Answers what the server sent.
 */
function misbehave(chunks: (string | Buffer)[], close: "end" | "reset" | "read"): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(endpoint.port, "127.0.0.1");
    let answer = "";
    socket.on("data", (chunk: Buffer) => (answer += chunk.toString("latin1")));
    socket.on("error", () => undefined);
    socket.once("close", () => resolve(answer));
    socket.once("connect", async () => {
      for (const chunk of chunks) await new Promise<void>((written) => socket.write(chunk, () => written()));
      if (close === "end") socket.end();
      else if (close === "reset") socket.resetAndDestroy();
    });
  });
}

async function databaseAnswers(): Promise<number> {
  const client = new pg.Client({ connectionString: embedded.url });
  await client.connect();
  try {
    return (await client.query<{ n: number }>("SELECT 1 AS n")).rows[0]!.n;
  } finally {
    await client.end();
  }
}

describe.skipIf(databaseKind !== "embedded")("the online-backup port (issue 31 M6)", () => {
  it("survives clients that connect and close, send garbage, a wrong token or half an exchange", { timeout: 120_000 }, async () => {
    await misbehave([], "end");
    await misbehave([], "reset");
    for (let i = 0; i < 20; i++) await misbehave([], i % 2 ? "end" : "reset");
    expect(await misbehave([Buffer.from([0, 1, 2, 255, 254, 10])], "read")).toMatch(/^ERR /);
    expect(await misbehave(["x".repeat(4096)], "read")).toMatch(/^ERR /);
    expect(await misbehave(["x".repeat(4096)], "end")).toMatch(/^(ERR .*\n)?$/);
    expect(await misbehave(["BACKUP wrong-token\n"], "read")).toMatch(/^ERR /);
    expect(await misbehave(["BACKUP wrong-token\n"], "end")).toMatch(/^(ERR .*\n)?$/);
    expect(await misbehave(["BACKUP wrong-token\n"], "reset")).toBeDefined();
    // Half an exchange: half the line, then gone; the whole right line, then gone before the archive.
    expect(await misbehave([`BACKUP ${endpoint.token.slice(0, 10)}`], "end")).toMatch(/^(ERR .*\n)?$/);
    expect(await misbehave([`BACKUP ${endpoint.token.slice(0, 10)}`], "reset")).toBeDefined();
    await misbehave([`BACKUP ${endpoint.token}\n`], "reset");
    await misbehave([`BACKUP ${endpoint.token}\n`], "end");

    // The database still answers, and a backup with the right token still works.
    expect(await databaseAnswers()).toBe(1);
    const file = join(work, "after.tar.gz");
    const { bytes } = await fetchOnlineBackup(endpoint, file);
    expect(bytes).toBeGreaterThan(1000);
    expect(statSync(file).size).toBe(bytes);
    expect(existsSync(`${file}.partial`)).toBe(false);
    expect(await databaseAnswers()).toBe(1);
  });
});
