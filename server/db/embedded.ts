import { mkdirSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { PGlite } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";
import { PGLiteSocketHandler } from "@electric-sql/pglite-socket";
import { PgliteSessionQueue } from "./pglite-session-queue.ts";

export interface EmbeddedPostgres {
  /** A `postgres://` URL on loopback that pg, knex and graphile-worker connect to. */
  url: string;
  stop: () => Promise<void>;
}

/**
 * The embedded default database: PGlite (Postgres in WASM, with pgvector) on `dataDir`, served on
 * a loopback port so that the same pg-based code runs on it as on a real PostgreSQL server.
 * `dataDir` undefined keeps the database in memory (tests).
 */
export async function startEmbeddedPostgres(dataDir: string | undefined, port = 0): Promise<EmbeddedPostgres> {
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  const db = await PGlite.create({ dataDir, extensions: { vector } });
  const queue = new PgliteSessionQueue(db);
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    // The handler only needs the queue's four methods; it was written against pglite-socket's own.
    const handler = new PGLiteSocketHandler({ queryQueue: queue as never, closeOnDetach: true } as never);
    handler.attach(socket).catch(() => socket.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("embedded database has no TCP address");
  return {
    url: `postgres://postgres@127.0.0.1:${address.port}/postgres`,
    stop: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await db.close();
    },
  };
}
