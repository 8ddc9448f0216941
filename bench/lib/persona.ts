import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { embeddedDatabaseUrl } from "../../server/toolkit/db/embedded-socket.ts";
import { freePort, startNode, type Child } from "./processes.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));

/**
 * Persona in its own child process on the embedded in-memory database (unless `env` names a
 * DATABASE_URL), with limits high enough that a load run measures the work, not the limiter.
 * `databaseUrl` reaches the embedded database through its socket, for setup the API cannot do.
 * With BENCH_PROFILE_DIR set, the server writes a V8 CPU profile there when it stops, sampled every
 * BENCH_PROFILE_INTERVAL microseconds (default 1000). `nodeArgs` go to node before the entry point
 * (e.g. `--import` of a bench probe).
 */
export async function startPersona(env: Record<string, string> = {}, nodeArgs: string[] = []): Promise<{ child: Child; url: string; databaseUrl: string }> {
  const port = await freePort();
  const socket = embeddedSocket();
  const child = await startNode(
    "persona",
    [...(process.env.BENCH_PROFILE_DIR ? ["--cpu-prof", "--cpu-prof-interval", process.env.BENCH_PROFILE_INTERVAL ?? "1000", `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : []), ...nodeArgs, `${root}server/main.ts`],
    {
      PORT: String(port),
      HOST: "127.0.0.1",
      EMBEDDED_DB_IN_MEMORY: "true",
      EMBEDDED_DB_SOCKET_DIR: socket.dir,
      DATABASE_URL: "", // the embedded database, whatever the calling shell has set
      LOG_LEVEL: "warn",
      RATE_LIMIT_PER_MINUTE: "1000000",
      AUTH_ATTEMPTS_PER_IP: "1000000",
      AUTH_ATTEMPTS_PER_EMAIL: "1000000",
      // One bench user opens up to 50 streams at once (bench:chat); the per-user cap is a guard, not what is measured.
      STREAMS_PER_USER: "1000",
      ...env,
    },
    `http://127.0.0.1:${port}`,
    "/healthz",
  );
  return { child, url: child.url, databaseUrl: env.DATABASE_URL || socket.url };
}

/** A private directory for an embedded database's socket (EMBEDDED_DB_SOCKET_DIR), and the URL that reaches it. */
export function embeddedSocket(): { dir: string; url: string } {
  const dir = mkdtempSync(join(tmpdir(), "persona-bench-db-"));
  return { dir, url: embeddedDatabaseUrl(dir) };
}
