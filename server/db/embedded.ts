import { Worker } from "node:worker_threads";
import type { Config } from "../config.ts";
import { DataDirLock, lockPath } from "./data-dir-lock.ts";
import type { EmbeddedThreadMessage, EmbeddedThreadOptions, EmbeddedTimings } from "./embedded-thread.ts";
import { currentTemplate } from "./embedded-template.ts";
import type { BackupEndpoint } from "./online-backup.ts";
import { StartupError } from "./startup-error.ts";

export interface EmbeddedPostgres {
  /** A `postgres://` URL on loopback that pg, knex and graphile-worker connect to. */
  url: string;
  timings: EmbeddedTimings;
  /** Where `persona backup` asks for an archive while this runs; none in memory. */
  backup?: BackupEndpoint;
  stop: () => Promise<void>;
}

/**
 * The embedded default database: PGlite (Postgres in WASM, with pgvector) on `dataDir`, served on
 * a loopback port so that the same pg-based code runs on it as on a real PostgreSQL server. It runs
 * in its own thread. `dataDir` undefined keeps the database in memory (tests).
 *
 * A data dir created just now (initdb) is opened again in a fresh thread: creating it leaves
 * hundreds of megabytes in the first thread's memory that it never gives back (measured: idle RSS
 * 720 MB after a first start, 330 MB after a restart), and reopening costs about a restart's open.
 */
export async function startEmbeddedPostgres(
  dataDir: string | undefined,
  port = 0,
  options: { pgvector?: boolean; template?: boolean } = {},
): Promise<EmbeddedPostgres> {
  const first = await startThread(dataDir, port, options);
  if (!dataDir || !first.timings.initdb) return first;
  await first.stop();
  const reopened = await startThread(dataDir, port, options);
  return { ...reopened, timings: { ...reopened.timings, initdb: true, openMs: first.timings.openMs + reopened.timings.openMs } };
}

async function startThread(dataDir: string | undefined, port: number, options: { pgvector?: boolean; template?: boolean }): Promise<EmbeddedPostgres> {
  const pgvector = options.pgvector !== false;
  // The template has pgvector's extension in it, so it serves only databases that load pgvector.
  const template = pgvector && options.template !== false ? currentTemplate() : undefined;
  const workerData: EmbeddedThreadOptions = { dataDir, port, pgvector, template, requestedAt: Date.now() };
  const thread = new Worker(new URL("./embedded-thread.ts", import.meta.url), { workerData });
  const ready = await new Promise<{ port: number; timings: EmbeddedTimings; backup?: BackupEndpoint }>((resolve, reject) => {
    thread.once("error", reject);
    thread.once("exit", (code) => reject(new Error(`embedded database thread exited with code ${code}`)));
    thread.once("message", (message: EmbeddedThreadMessage) => {
      if (message.type === "ready") resolve(message);
    });
  });
  thread.removeAllListeners("exit");
  thread.removeAllListeners("error");
  return {
    url: `postgres://postgres@127.0.0.1:${ready.port}/postgres`,
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
export async function startEmbeddedDatabase(config: Pick<Config, "embeddedDbInMemory" | "dataDir" | "embeddedDbPort">): Promise<EmbeddedDatabase> {
  const dir = config.embeddedDbInMemory ? undefined : `${config.dataDir}/db`;
  const startedAt = Date.now();
  const lock = dir === undefined ? undefined : lockDataDir(dir);
  let embedded: EmbeddedPostgres;
  try {
    embedded = await startEmbeddedPostgres(dir, config.embeddedDbPort);
  } catch (error) {
    lock?.release();
    throw error;
  }
  lock?.recordServing(Number(new URL(embedded.url).port), embedded.backup);
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

/** The data dir's lock, or a start-up error naming the process that holds it and how to share. */
function lockDataDir(dir: string): DataDirLock {
  const lock = DataDirLock.acquire(dir);
  if (lock instanceof DataDirLock) return lock;
  const served = lock.port ? ` on postgres://postgres@127.0.0.1:${lock.port}/postgres` : "";
  throw new StartupError(
    `The embedded database in ${dir} is in use by process ${lock.pid} (since ${lock.since})${served}. ` +
      "Two processes on one data dir lose data, so this one stops. To run a second server on the same data, " +
      "start the first with a fixed EMBEDDED_DB_PORT and give the second DATABASE_URL=postgres://postgres@127.0.0.1:<that port>/postgres; " +
      "or use another PERSONA_DATA_DIR, or PostgreSQL. " +
      `If no persona process is running, the lock ${lockPath(dir)} is left over: delete it.`,
  );
}
