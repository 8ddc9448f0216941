import { randomBytes, timingSafeEqual } from "node:crypto";
import { createWriteStream, renameSync, rmSync } from "node:fs";
import { connect, createServer, type Socket } from "node:net";

/**
 * Online backup of the embedded database: the process that holds the data dir serves its archive
 * on a loopback port, so `persona backup` works while the server runs. The port and a token are
 * in the data dir's lock file (mode 0600): whoever can read it could read the data dir itself.
 *
 * The exchange is one line each way, then the archive: `BACKUP <token>\n`, answered with
 * `OK <bytes> <held ms>\n` and the bytes, or `ERR <message>\n`. `held ms` is how long clients of
 * the database waited while it was read.
 */
export interface BackupEndpoint {
  port: number;
  token: string;
}

const HEADER_LIMIT = 512;
const REQUEST_TIMEOUT_MS = 10_000;

export interface Archive {
  /** A gzipped tar of the data dir. */
  bytes: Uint8Array;
  /** How long the database served nobody else while it was read. */
  heldMs: number;
}

/**
 * Serves `archive()` to whoever presents the token. A client may do anything (close at once, reset,
 * send garbage or half a line, go away before the archive): its socket's errors are its own, and
 * nothing is written to a socket that has ended (issue 31 M6: a client that connected and closed at
 * once made the reply a write after end, uncaught in the database's thread, and the server exited).
 */
export async function serveOnlineBackup(archive: () => Promise<Archive>): Promise<{ endpoint: BackupEndpoint; close: () => Promise<void> }> {
  const token = randomBytes(24).toString("base64url");
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    socket.setTimeout(REQUEST_TIMEOUT_MS, () => socket.destroy());
    readLine(socket)
      .then(async (line) => {
        if (!line || !tokenMatches(line, token)) return reply(socket, "ERR not a backup request with this server's token\n");
        socket.setTimeout(0);
        // A client already gone would cost the database's clients the wait for nothing.
        if (!socket.writable) return socket.destroy();
        const { bytes, heldMs } = await archive();
        reply(socket, `OK ${bytes.length} ${Math.round(heldMs)}\n`, bytes);
      })
      .catch((error: unknown) => reply(socket, `ERR ${(error instanceof Error ? error.message : String(error)).replace(/\s+/g, " ")}\n`));
  });
  // A failure of the listening socket after it listens is no reason to stop the database.
  server.on("error", () => undefined);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("online backup has no TCP address");
  return {
    endpoint: { port: address.port, token },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Sends `line` (and `body`) and ends, if the client is still there to read it. */
function reply(socket: Socket, line: string, body?: Uint8Array): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.write(line);
  if (body) socket.write(body);
  socket.end();
}

function tokenMatches(line: string, token: string): boolean {
  const expected = Buffer.from(`BACKUP ${token}`);
  const given = Buffer.from(line);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The first line of `socket` (without its newline), or undefined if it ends, breaks or grows too long first. */
function readLine(socket: Socket): Promise<string | undefined> {
  return new Promise((resolve) => {
    let buffered = "";
    const done = (line: string | undefined) => {
      socket.off("data", onData).off("end", onGone).off("close", onGone);
      resolve(line);
    };
    const onGone = () => done(undefined);
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString("latin1");
      const end = buffered.indexOf("\n");
      if (end < 0 && buffered.length < HEADER_LIMIT) return;
      done(end < 0 ? undefined : buffered.slice(0, end));
    };
    socket.on("data", onData).once("end", onGone).once("close", onGone);
  });
}

/**
 * Asks the running server at `endpoint` for its archive and writes it to `file` (beside it first,
 * then renamed: an interrupted backup never leaves a truncated file). Rejects with the server's
 * reason, or when the connection ends short of the announced size.
 */
export function fetchOnlineBackup(endpoint: BackupEndpoint, file: string): Promise<{ bytes: number; heldMs: number }> {
  const partial = `${file}.partial`;
  return new Promise((resolve, reject) => {
    const socket = connect(endpoint.port, "127.0.0.1");
    const out = createWriteStream(partial, { mode: 0o600 });
    let header = Buffer.alloc(0);
    let expected: number | undefined;
    let heldMs = 0;
    let received = 0;
    const fail = (error: Error) => {
      socket.destroy();
      out.destroy();
      rmSync(partial, { force: true });
      reject(error);
    };
    socket.once("connect", () => socket.write(`BACKUP ${endpoint.token}\n`));
    socket.on("data", (chunk: Buffer) => {
      if (expected === undefined) {
        header = Buffer.concat([header, chunk]);
        const end = header.indexOf(10);
        if (end < 0) return header.length > HEADER_LIMIT ? fail(new Error("the server's answer is not a backup")) : undefined;
        const line = header.subarray(0, end).toString("utf8");
        if (!line.startsWith("OK ")) return fail(new Error(line.startsWith("ERR ") ? line.slice(4) : "the server's answer is not a backup"));
        [expected, heldMs] = line.slice(3).split(" ").map(Number) as [number, number];
        chunk = header.subarray(end + 1);
      }
      received += chunk.length;
      out.write(chunk);
    });
    socket.on("error", fail);
    socket.once("end", () => {
      if (expected === undefined || received !== expected) return fail(new Error(`the connection ended after ${received} of ${expected ?? "?"} bytes`));
      out.end(() => {
        renameSync(partial, file);
        resolve({ bytes: received, heldMs });
      });
    });
  });
}
