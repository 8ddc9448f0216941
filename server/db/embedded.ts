import { Worker } from "node:worker_threads";
import type { EmbeddedThreadMessage, EmbeddedThreadOptions } from "./embedded-thread.ts";

export interface EmbeddedPostgres {
  /** A `postgres://` URL on loopback that pg, knex and graphile-worker connect to. */
  url: string;
  stop: () => Promise<void>;
}

/**
 * The embedded default database: PGlite (Postgres in WASM, with pgvector) on `dataDir`, served on
 * a loopback port so that the same pg-based code runs on it as on a real PostgreSQL server. It runs
 * in its own thread. `dataDir` undefined keeps the database in memory (tests).
 */
export async function startEmbeddedPostgres(
  dataDir: string | undefined,
  port = 0,
  options: { pgvector?: boolean } = {},
): Promise<EmbeddedPostgres> {
  const workerData: EmbeddedThreadOptions = { dataDir, port, pgvector: options.pgvector !== false };
  const thread = new Worker(new URL("./embedded-thread.ts", import.meta.url), { workerData });
  const ready = await new Promise<number>((resolve, reject) => {
    thread.once("error", reject);
    thread.once("exit", (code) => reject(new Error(`embedded database thread exited with code ${code}`)));
    thread.once("message", (message: EmbeddedThreadMessage) => {
      if (message.type === "ready") resolve(message.port);
    });
  });
  thread.removeAllListeners("exit");
  thread.removeAllListeners("error");
  return {
    url: `postgres://postgres@127.0.0.1:${ready}/postgres`,
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
