import { chmodSync, lstatSync, mkdirSync, mkdtempSync, unlinkSync } from "node:fs";
import { connect, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { StartupError } from "./startup-error.ts";

/**
 * Where the embedded database is served: a Unix socket in a directory only its owner may enter
 * (issue 31 H4). On a loopback port any local process could connect as the superuser and read
 * `instance_secrets`; through the socket, reaching the database takes what reading its files takes.
 * The file is named as PostgreSQL names its own, so that pg, knex and graphile-worker reach it with
 * an ordinary URL whose `host` is the directory.
 */
const SOCKET_PORT = 5432;
export const SOCKET_FILE = `.s.PGSQL.${SOCKET_PORT}`;

// sun_path holds 108 bytes on Linux and 104 on macOS, each with its terminating NUL.
const MAX_SOCKET_PATH = 103;

/**
 * The URL pg, knex and graphile-worker connect to the embedded database in `socketDir` with. It
 * names the port and TLS mode itself: pg fills what a URL leaves out from libpq's variables, and
 * PGPORT or PGSSLMODE there belong to the operator's own server (CI exports PGPORT for its
 * PostgreSQL), not to this socket.
 */
export function embeddedDatabaseUrl(socketDir: string): string {
  const host = encodeURIComponent(socketDir).replaceAll("%2F", "/");
  return `postgres:///postgres?host=${host}&port=${SOCKET_PORT}&user=postgres&sslmode=disable`;
}

export const socketPath = (socketDir: string) => join(socketDir, SOCKET_FILE);

export const fitsSocketPath = (socketDir: string) => Buffer.byteLength(socketPath(socketDir)) <= MAX_SOCKET_PATH;

/** A new directory of this user's only (mode 0700, mkdtemp's), for a database that has no data dir or one at too long a path. */
export function temporarySocketDir(): string {
  return mkdtempSync(join(tmpdir(), "persona-db-"));
}

/**
 * Makes `dir` ready to hold the socket: created 0700 if missing; else it must be a directory (not a
 * link) of this user. One the service owns (beside its data dir) is set back to 0700; one the
 * operator named (EMBEDDED_DB_SOCKET_DIR) must already be private, since it could be any directory.
 */
export function prepareSocketDir(dir: string, owned: "ours" | "operator's"): void {
  if (!fitsSocketPath(dir)) {
    throw new StartupError(`The embedded database's socket ${socketPath(dir)} is longer than a Unix socket path may be (${MAX_SOCKET_PATH} bytes): set EMBEDDED_DB_SOCKET_DIR to a shorter directory.`);
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = lstatSync(dir);
  const uid = process.getuid?.();
  if (!stat.isDirectory() || (uid !== undefined && stat.uid !== uid)) {
    throw new StartupError(`The embedded database's socket directory ${dir} must be a directory of this user (uid ${uid}), not a link.`);
  }
  if ((stat.mode & 0o077) === 0) return;
  if (owned === "ours") return chmodSync(dir, 0o700);
  throw new StartupError(
    `The embedded database's socket directory ${dir} (EMBEDDED_DB_SOCKET_DIR) is open to others (mode ${(stat.mode & 0o777).toString(8)}): ` +
      "whoever can enter it can connect to the database as its superuser. Make it 0700 or name another.",
  );
}

/**
 * Listens on the socket in `socketDir`, owner only. A socket file left by a process that is gone
 * (kill -9) is replaced; one that a live server answers on is not.
 */
export async function listenOnSocket(server: Server, socketDir: string): Promise<void> {
  const path = socketPath(socketDir);
  try {
    await listen(server, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EADDRINUSE") throw error;
    if (await answers(path)) throw new Error(`Another server already serves on ${path}`);
    unlinkSync(path);
    await listen(server, path);
  }
  chmodSync(path, 0o600);
}

function listen(server: Server, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once("error", onError);
    server.listen(path, () => {
      server.off("error", onError);
      resolve();
    });
  });
}

function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect(path);
    probe.once("connect", () => {
      probe.destroy();
      resolve(true);
    });
    probe.once("error", () => resolve(false));
  });
}
