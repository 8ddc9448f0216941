// Runs in a worker thread: PGlite (with pgvector and pg_trgm) served on a Unix socket in a directory of
// its owner's only (embedded-socket.ts). Keeping the database off the main thread means its WebAssembly
// work never stalls the HTTP event loop.
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { promisify } from "node:util";
import { parentPort, workerData } from "node:worker_threads";
import { gzip } from "node:zlib";
import type { Template } from "./embedded-template.ts";
import type { BackupEndpoint } from "./online-backup.ts";

export interface EmbeddedThreadOptions {
  dataDir: string | undefined;
  /** The directory, private to this user, that the socket is made in (embedded-socket.ts). */
  socketDir: string;
  pgvector: boolean;
  /** A migrated database to start a new one from instead of creating it (embedded-template.ts). */
  template: Template | undefined;
  /** Date.now() when the thread was asked for, to time its own start-up. */
  requestedAt: number;
}

/** How long the thread took to load PGlite's code and to open (or first create) the database. */
export interface EmbeddedTimings {
  modulesMs: number;
  openMs: number;
  /** The database was created here with initdb. */
  initdb: boolean;
  /** The database was created here from the install's template. */
  fromTemplate: boolean;
}

export type EmbeddedThreadMessage = { type: "ready"; timings: EmbeddedTimings; backup?: BackupEndpoint } | { type: "stopped" };

// Postgres's default of 128 MB of shared buffers is for a server; here they sit in this process's
// memory and were most of its idle RSS (measured: 400 MB with 128 MB, 250 MB with 16 MB). The
// operating system's page cache still holds the data files.
const SETTINGS = ["-c", "shared_buffers=16MB"];

const options = workerData as EmbeddedThreadOptions;
// Loaded here rather than imported, so that the thread can say how long loading PGlite takes.
const [{ PGlite }, { pg_trgm }, { vector }, { PGLiteSocketHandler }, { PgliteSessionQueue }, { serveOnlineBackup }, { listenOnSocket }, { keepToOwner, writableByOthers }] =
  await Promise.all([
    import("@electric-sql/pglite"),
    import("@electric-sql/pglite/contrib/pg_trgm"),
    import("@electric-sql/pglite-pgvector"),
    import("@electric-sql/pglite-socket"),
    import("./pglite-session-queue.ts"),
    import("./online-backup.ts"),
    import("./embedded-socket.ts"),
    import("./private-files.ts"),
  ]);
const loaded = Date.now();
if (options.dataDir) {
  // Closed to others before anything is written in it (issue 31 M5); what is in it is set right once open.
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  chmodSync(options.dataDir, 0o700);
}
const created = !options.dataDir || !existsSync(`${options.dataDir}/PG_VERSION`);
const template = created ? trusted(options.template) : undefined;
const fromTemplate = template !== undefined;
if (template && options.dataDir) cpSync(template.dir, options.dataDir, { recursive: true });
const db = await PGlite.create({
  dataDir: options.dataDir,
  extensions: options.pgvector ? { vector, pg_trgm } : { pg_trgm },
  startParams: [...PGlite.defaultStartParams, ...SETTINGS],
  ...(template && !options.dataDir ? { loadDataDir: new Blob([readFileSync(template.tar)]) } : {}),
});
if (options.dataDir) keepToOwner(options.dataDir);
const timings: EmbeddedTimings = { modulesMs: loaded - options.requestedAt, openMs: Date.now() - loaded, initdb: created && !fromTemplate, fromTemplate };
const queue = new PgliteSessionQueue(db);
const sockets = new Set<Socket>();
const server = createServer((socket) => {
  sockets.add(socket);
  socket.once("close", () => sockets.delete(socket));
  // The handler only needs the queue's four methods; it was written against pglite-socket's own.
  const handler = new PGLiteSocketHandler({ queryQueue: queue as never, closeOnDetach: true } as never);
  handler.attach(socket).catch(() => socket.destroy());
});
await listenOnSocket(server, options.socketDir);
// A data dir on disk can be backed up while it is served: the archive is read with the session to
// itself (no client between two statements or inside a transaction), after a checkpoint; only the
// compression runs while clients go on.
const backup = options.dataDir
  ? await serveOnlineBackup(async () => {
      let heldMs = 0;
      const tar = await queue.exclusive(async () => {
        const held = performance.now();
        await db.exec("CHECKPOINT");
        const dumped = await db.dumpDataDir("none");
        heldMs = performance.now() - held;
        return dumped;
      });
      return { bytes: await promisify(gzip)(new Uint8Array(await tar.arrayBuffer())), heldMs };
    })
  : undefined;
parentPort!.postMessage({ type: "ready", timings, backup: backup?.endpoint } satisfies EmbeddedThreadMessage);

parentPort!.on("message", async (message: { type: string }) => {
  if (message.type !== "stop") return;
  for (const socket of sockets) socket.destroy();
  await backup?.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await queue.close();
  await db.close();
  parentPort!.postMessage({ type: "stopped" } satisfies EmbeddedThreadMessage);
});

/**
 * The install's template, unless anyone but its owner could have written to what would be copied
 * (a template from before issue 31 M5 was 0666): a new database is then created with initdb.
 */
function trusted(template: Template | undefined): Template | undefined {
  if (!template) return undefined;
  const alterable = options.dataDir ? writableByOthers(template.dir) : (statSync(template.tar).mode & 0o022) !== 0;
  return alterable ? undefined : template;
}
