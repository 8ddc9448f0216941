import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { BackupEndpoint } from "./online-backup.ts";

/** Who holds an embedded data dir: the process, and where its database is served. */
export interface LockHolder {
  pid: number;
  /** The directory of the database's Unix socket (embedded-socket.ts). Set once the database is up; a process still starting has none yet. */
  socket?: string;
  /** Where the holder serves online backups (the lock file is readable by its owner only). */
  backup?: BackupEndpoint;
  since: string;
}

/**
 * One process per embedded data dir. PGlite is a single Postgres session on files it assumes it
 * alone writes: two processes on one dir lose data and can leave it unreadable. The lock is a file
 * beside the dir, created exclusively and readable by its owner only, naming the holder's PID (and,
 * once up, where the database is served, so that admin commands and `serve --processes` attach to
 * the running server instead of opening the dir). Like PostgreSQL's postmaster.pid, a lock whose process is gone (kill -9, a crash) is stale
 * and is taken over on the next start.
 */
export class DataDirLock {
  readonly path: string;
  #holder: LockHolder;

  private constructor(path: string, holder: LockHolder) {
    this.path = path;
    this.#holder = holder;
  }

  /** Takes the lock of `dataDir`, or answers the live process that holds it. */
  static acquire(dataDir: string): DataDirLock | LockHolder {
    const path = lockPath(dataDir);
    // A new PERSONA_DATA_DIR is its owner's only (issue 31 M5); an existing one is the operator's.
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    const holder: LockHolder = { pid: process.pid, since: new Date().toISOString() };
    // Two rounds: the second follows the removal of a stale lock.
    for (let round = 0; round < 2; round++) {
      try {
        writeFileSync(path, JSON.stringify(holder), { flag: "wx", mode: 0o600 });
        held.add(path);
        return new DataDirLock(path, holder);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
      let current = readHolder(path);
      if (!current) {
        // Another process may have created the file and not yet written it: look once more.
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
        current = readHolder(path);
      }
      if (current && isAlive(current.pid) && !isEarlierSelf(path, current)) return current;
      removeIfUnchanged(path, current);
    }
    const current = readHolder(path);
    if (current) return current;
    throw new Error(`Cannot take the lock ${path}`);
  }

  /** Records where the database is served and its online backup, for admin commands to attach to. */
  recordServing(socket: string, backup?: BackupEndpoint): void {
    this.#holder = { ...this.#holder, socket, ...(backup ? { backup } : {}) };
    writeFileSync(this.path, JSON.stringify(this.#holder), { mode: 0o600 });
  }

  release(): void {
    removeIfUnchanged(this.path, this.#holder);
    held.delete(this.path);
  }
}

/** The locks this process took (and has not released). */
const held = new Set<string>();

/**
 * A lock naming this very PID that this process never took was left by an earlier process that had
 * the same PID: in a container the server is PID 1 at every start, so a lock left by a kill -9 would
 * otherwise name a live process forever.
 */
const isEarlierSelf = (path: string, holder: LockHolder) => holder.pid === process.pid && !held.has(path);

export const lockPath = (dataDir: string) => `${dataDir.replace(/(?<!\/)\/+$/, "")}.lock`;

/** The live process holding `dataDir`, if any (a stale lock counts as none). */
export function liveHolder(dataDir: string): LockHolder | undefined {
  const holder = readHolder(lockPath(dataDir));
  return holder && isAlive(holder.pid) ? holder : undefined;
}

function readHolder(path: string): LockHolder | undefined {
  try {
    const parsed = JSON.parse(readFileSync(path, "utf8")) as Partial<LockHolder>;
    return typeof parsed.pid === "number" ? (parsed as LockHolder) : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Removes the lock only if it still names `expected`, so a lock another process just took survives. */
function removeIfUnchanged(path: string, expected: LockHolder | undefined): void {
  const now = readHolder(path);
  if (expected && now && (now.pid !== expected.pid || now.since !== expected.since)) return;
  try {
    unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
}
