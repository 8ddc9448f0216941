import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../server/toolkit/config.ts";
import { startService } from "../../server/runtime.ts";
import { root } from "../support/contract.ts";
import { freePort } from "../support/ports.ts";
import { databaseKind } from "../support/service.ts";

// Issue 31 H4: the outside test connected to the embedded database's loopback port as `postgres`,
// with no password, read `instance_secrets.jwt` and forged tokens. The embedded database must be
// reachable by its owner only: no loopback port (EMBEDDED_DB_PORT, which pinned it, serves nothing
// now), and its Unix socket is in a directory no other user may enter.

const READ_SECRET = `
import pg from "pg";
const client = new pg.Client({ connectionString: process.argv[1], connectionTimeoutMillis: 5000 });
try {
  await client.connect();
  const { rows } = await client.query("SELECT value FROM instance_secrets WHERE name = 'jwt'");
  console.log(JSON.stringify({ read: rows.length }));
  await client.end();
} catch (error) {
  console.log(JSON.stringify({ refused: error.code ?? error.message }));
}`;

/** Runs READ_SECRET against `url` as the unprivileged user `nobody`. */
function readAsNobody(url: string): { read?: number; refused?: string } {
  const out = execFileSync("runuser", ["-u", "nobody", "--", process.execPath, "--input-type=module", "-e", READ_SECRET, url], { cwd: root, encoding: "utf8" });
  return JSON.parse(out.trim().split("\n").at(-1)!) as { read?: number; refused?: string };
}

const asRoot = process.getuid?.() === 0;

describe.skipIf(databaseKind !== "embedded")("the embedded database's access (issue 31 H4)", () => {
  it("serves no loopback port, and is out of reach of another local user", { timeout: 120_000 }, async () => {
    const work = mkdtempSync(join(tmpdir(), "persona-access-"));
    // An operator's data dir that anyone may enter: the socket's own directory must keep others out.
    chmodSync(work, 0o755);
    const dataDir = join(work, "data");
    mkdirSync(dataDir, { mode: 0o755 });
    chmodSync(dataDir, 0o755);
    const port = await freePort();
    const config = loadConfig({ PORT: "0", LOG_LEVEL: "silent", PERSONA_DATA_DIR: dataDir, EMBEDDED_DB_PORT: String(port), WORKER_ENABLED: "false" });
    const service = await startService(config, { http: false });
    try {
      // The service itself reads its secret.
      expect(await service.services.db.knex("instance_secrets").where({ name: "jwt" }).first()).toBeDefined();

      // The outside test's way in: a plain pg client to the pinned loopback port, as postgres, no password.
      const outsider = new pg.Client({ host: "127.0.0.1", port, user: "postgres", database: "postgres", connectionTimeoutMillis: 5000 });
      outsider.on("error", () => undefined);
      const attempt = outsider.connect().then(
        async () => {
          const { rows } = await outsider.query("SELECT value FROM instance_secrets WHERE name = 'jwt'");
          await outsider.end();
          return `connected and read ${rows.length} secret(s)`;
        },
        (error: NodeJS.ErrnoException) => error.code,
      );
      expect(await attempt).toBe("ECONNREFUSED");
      expect(service.services.db.url).not.toMatch(/@?127\.0\.0\.1|localhost/);

      // The lock file, where the CLI and `serve --processes` find the database, is the owner's only.
      const lock = `${dataDir}/db.lock`;
      expect(statSync(lock).mode & 0o077).toBe(0);
      expect(JSON.parse(readFileSync(lock, "utf8"))).not.toHaveProperty("port");

      // Another local user, at the very address the service's own connections use, is refused.
      if (asRoot) {
        expect(readAsNobody(service.services.db.url)).toEqual({ refused: "EACCES" });
      }
    } finally {
      await service.stop();
      rmSync(work, { recursive: true, force: true });
    }
  });
});
