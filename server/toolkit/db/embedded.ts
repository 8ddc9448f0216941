import { rmSync } from "node:fs";
import { resolve } from "node:path";
import { Worker } from "node:worker_threads";
import type { Config } from "../config.ts";
import { DataDirLock, lockPath } from "./data-dir-lock.ts";
import { embeddedDatabaseUrl, fitsSocketPath, prepareSocketDir, temporarySocketDir } from "./embedded-socket.ts";
import type { EmbeddedThreadMessage, EmbeddedThreadOptions, EmbeddedTimings } from "./embedded-thread.ts";
import { currentTemplate } from "./embedded-template.ts";
import type { BackupEndpoint } from "./online-backup.ts";
import { StartupError } from "./startup-error.ts";

export interface EmbeddedPostgres {
  /** The `postgres://` URL, through the Unix socket, that pg, knex and graphile-worker connect to. */
  url: string;
  /** The directory of that socket. */
  socketDir: string;
  timings: EmbeddedTimings;
  /** Where `persona backup` asks for an archive while this runs; none in memory. */
  backup?: BackupEndpoint;
  stop: () => Promise<void>;
}

export interface EmbeddedOptions {
  /** A directory private to this user to serve the socket in (see prepareSocketDir); unset: a temporary one, removed at stop. */
  socketDir?: string | undefined;
  pgvector?: boolean;
  template?: boolean;
}

/**
 * The embedded default database: PGlite (Postgres in WASM, with pgvector) on `dataDir`, served on
 * a Unix socket so that the same pg-based code runs on it as on a real PostgreSQL server, and so
 * that only its owner can reach it (issue 31 H4: on a loopback port, any local process could). It
 * runs in its own thread. `dataDir` undefined keeps the database in memory (tests).
 *
 * A data dir created just now (initdb) is opened again in a fresh thread: creating it leaves
 * hundreds of megabytes in the first thread's memory that it never gives back (measured: idle RSS
 * 720 MB after a first start, 330 MB after a restart), and reopening costs about a restart's open.
 */
export async function startEmbeddedPostgres(dataDir: string | undefined, options: EmbeddedOptions = {}): Promise<EmbeddedPostgres> {
  const temporary = options.socketDir === undefined ? temporarySocketDir() : undefined;
  const socketDir = options.socketDir ?? temporary!;
  const removeTemporary = () => temporary && rmSync(temporary, { recursive: true, force: true });
  try {
    const first = await startThread(dataDir, socketDir, options);
    const started = !dataDir || !first.timings.initdb ? first : await reopen(first, dataDir, socketDir, options);
    return {
      ...started,
      stop: async () => {
        await started.stop();
        removeTemporary();
      },
    };
  } catch (error) {
    removeTemporary();
    throw error;
  }
}

async function reopen(first: EmbeddedPostgres, dataDir: string, socketDir: string, options: EmbeddedOptions): Promise<EmbeddedPostgres> {
  await first.stop();
  const reopened = await startThread(dataDir, socketDir, options);
  return { ...reopened, timings: { ...reopened.timings, initdb: true, openMs: first.timings.openMs + reopened.timings.openMs } };
}

async function startThread(dataDir: string | undefined, socketDir: string, options: EmbeddedOptions): Promise<EmbeddedPostgres> {
  const pgvector = options.pgvector !== false;
  // The template has pgvector's extension in it, so it serves only databases that load pgvector.
  const template = pgvector && options.template !== false ? currentTemplate() : undefined;
  const workerData: EmbeddedThreadOptions = { dataDir, socketDir, pgvector, template, requestedAt: Date.now() };
  const thread = new Worker(new URL("./embedded-thread.ts", import.meta.url), { workerData });
  const ready = await new Promise<{ timings: EmbeddedTimings; backup?: BackupEndpoint }>((resolve, reject) => {
    thread.once("error", reject);
    thread.once("exit", (code) => reject(new Error(`embedded database thread exited with code ${code}`)));
    thread.once("message", (message: EmbeddedThreadMessage) => {
      if (message.type === "ready") resolve(message);
    });
  });
  thread.removeAllListeners("exit");
  thread.removeAllListeners("error");
  return {
    url: embeddedDatabaseUrl(socketDir),
    socketDir,
    timings: ready.timings,
    ...(ready.backup ? { backup: ready.backup } : {}),
    stop: async () => {
      const stopped = new Promise<void>((resolve) => {
        thread.once("message", (message: EmbeddedThreadMessage) => message.type === "stopped" && resolve());
        thread.once("exit", () => resolve());
      });
      thread.postMessage({ type: "stop" });
      await stopped;
      await thread.terminate();
    },
  };
}

/** The configured embedded database, running, with its data dir locked for this process. */
export interface EmbeddedDatabase extends EmbeddedPostgres {
  /** The data dir, or undefined in memory. */
  dir: string | undefined;
  /** When it was asked to start (Date.now()), for the start-up log. */
  startedAt: number;
}

/**
 * Locks the configured data dir and starts the embedded database on it. Light on imports, so that
 * `npm start` can call it before it loads the rest of the service: PGlite then loads and opens in
 * its thread, on another core, while the main thread loads its modules.
 */
export async function startEmbeddedDatabase(config: Pick<Config, "embeddedDbInMemory" | "dataDir" | "embeddedDbSocketDir">): Promise<EmbeddedDatabase> {
  const dir = config.embeddedDbInMemory ? undefined : `${config.dataDir}/db`;
  const startedAt = Date.now();
  const lock = dir === undefined ? undefined : lockDataDir(dir);
  let embedded: EmbeddedPostgres;
  try {
    embedded = await startEmbeddedPostgres(dir, { socketDir: socketDirFor(dir, config.embeddedDbSocketDir) });
  } catch (error) {
    lock?.release();
    throw error;
  }
  lock?.recordServing(embedded.socketDir, embedded.backup);
  return {
    ...embedded,
    dir,
    startedAt,
    stop: async () => {
      await embedded.stop();
      lock?.release();
    },
  };
}

/**
 * Where the socket of the database on `dataDir` is made: the operator's EMBEDDED_DB_SOCKET_DIR;
 * else `<data dir>.socket`, a fixed place another process on the same data can be pointed at;
 * else (in memory, or a data dir at so long a path that the socket's would not fit) a temporary dir.
 */
function socketDirFor(dataDir: string | undefined, configured: string | undefined): string | undefined {
  if (configured !== undefined) {
    const dir = resolve(configured);
    prepareSocketDir(dir, "operator's");
    return dir;
  }
  const beside = dataDir === undefined ? undefined : `${dataDir}.socket`;
  if (beside === undefined || !fitsSocketPath(beside)) return undefined;
  prepareSocketDir(beside, "ours");
  return beside;
}

/** The data dir's lock, or a start-up error naming the process that holds it and how to share. */
function lockDataDir(dir: string): DataDirLock {
  const lock = DataDirLock.acquire(dir);
  if (lock instanceof DataDirLock) return lock;
  const url = lock.socket ? embeddedDatabaseUrl(lock.socket) : "postgres:///postgres?host=<its socket directory, once it serves>&port=5432&user=postgres";
  throw new StartupError(
    `The embedded database in ${dir} is in use by process ${lock.pid} (since ${lock.since}). ` +
      "Two processes on one data dir lose data, so this one stops. To run a second server on the same data, as the same user, " +
      `give it DATABASE_URL=${url}; ` +
      "or use another PERSONA_DATA_DIR, or PostgreSQL. " +
      `If no persona process is running, the lock ${lockPath(dir)} is left over: delete it.`,
  );
}
