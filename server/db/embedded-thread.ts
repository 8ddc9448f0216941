// Runs in a worker thread: PGlite (with pgvector and pg_trgm) served on a loopback port. Keeping the database
// off the main thread means its WebAssembly work never stalls the HTTP event loop.
import { mkdirSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { parentPort, workerData } from "node:worker_threads";
import { PGlite } from "@electric-sql/pglite";
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";
import { vector } from "@electric-sql/pglite-pgvector";
import { PGLiteSocketHandler } from "@electric-sql/pglite-socket";
import { PgliteSessionQueue } from "./pglite-session-queue.ts";

export interface EmbeddedThreadOptions {
  dataDir: string | undefined;
  port: number;
  pgvector: boolean;
}

export type EmbeddedThreadMessage = { type: "ready"; port: number } | { type: "stopped" };

const options = workerData as EmbeddedThreadOptions;
if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });
const db = await PGlite.create({ dataDir: options.dataDir, extensions: options.pgvector ? { vector, pg_trgm } : { pg_trgm } });
const queue = new PgliteSessionQueue(db);
const sockets = new Set<Socket>();
const server = createServer((socket) => {
  sockets.add(socket);
  socket.once("close", () => sockets.delete(socket));
  // The handler only needs the queue's four methods; it was written against pglite-socket's own.
  const handler = new PGLiteSocketHandler({ queryQueue: queue as never, closeOnDetach: true } as never);
  handler.attach(socket).catch(() => socket.destroy());
});
await new Promise<void>((resolve, reject) => {
  server.once("error", reject);
  server.listen(options.port, "127.0.0.1", () => resolve());
});
const address = server.address();
if (!address || typeof address === "string") throw new Error("embedded database has no TCP address");
parentPort!.postMessage({ type: "ready", port: address.port } satisfies EmbeddedThreadMessage);

parentPort!.on("message", async (message: { type: string }) => {
  if (message.type !== "stop") return;
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await queue.close();
  await db.close();
  parentPort!.postMessage({ type: "stopped" } satisfies EmbeddedThreadMessage);
});
