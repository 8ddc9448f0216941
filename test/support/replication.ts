import { execFile } from "node:child_process";
import { chownSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { userInfo } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { freePort } from "./ports.ts";

const run = promisify(execFile);
const PGBIN = "/usr/lib/postgresql/15/bin";

export interface ReplicatedPair {
  /** The primary's `postgres` database (pgvector created). */
  primaryUrl: string;
  /** A hot standby of it by streaming replication, replaying `applyDelayMs` behind. */
  replicaUrl: string;
  stop(): Promise<void>;
}

/**
 * A PostgreSQL 15 primary and one hot standby on loopback, in a temporary directory: the standby is
 * a `pg_basebackup` of the primary (`-R` writes its connection), and replays each transaction
 * `applyDelayMs` after its commit (`recovery_min_apply_delay`), so a test can tell which of the two
 * answered a read. `settings` (`name=value`) go to both servers. Run as root, the servers run as the `postgres` user, as scripts/ci/postgres.sh does.
 */
export async function startReplicatedPair(options: { applyDelayMs: number; settings?: readonly string[] }): Promise<ReplicatedPair> {
  const root = userInfo().uid === 0;
  const dir = mkdtempSync("/tmp/persona-replication-");
  if (root) chownSync(dir, uidOf("postgres"), gidOf("postgres"));
  const asPg = (file: string, args: string[]) => (root ? run("runuser", ["-u", "postgres", "--", file, ...args], { cwd: "/" }) : run(file, args));
  const [primaryPort, replicaPort] = [await freePort(), await freePort()];
  const primaryData = join(dir, "primary");
  const replicaData = join(dir, "replica");
  const started: string[] = [];
  const stop = async () => {
    for (const data of started.reverse()) await asPg(`${PGBIN}/pg_ctl`, ["stop", "-w", "-m", "immediate", "-D", data]).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await asPg(`${PGBIN}/initdb`, ["-D", primaryData, "--auth=trust", "-U", "postgres", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"]);
    const extra = (options.settings ?? []).map((setting) => `-c ${setting}`).join(" ");
    const common = `-c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off -c full_page_writes=off -k /tmp ${extra}`;
    await asPg(`${PGBIN}/pg_ctl`, ["start", "-w", "-t", "60", "-D", primaryData, "-l", join(dir, "primary.log"),
      "-o", `-p ${primaryPort} ${common} -c wal_level=replica -c max_wal_senders=4 -c synchronous_commit=off`]);
    started.push(primaryData);
    const primaryUrl = `postgres://postgres@127.0.0.1:${primaryPort}/postgres`;
    const client = new pg.Client({ connectionString: primaryUrl });
    await client.connect();
    await client.query("CREATE EXTENSION IF NOT EXISTS vector");
    await client.end();
    await asPg(`${PGBIN}/pg_basebackup`, ["-h", "127.0.0.1", "-p", String(primaryPort), "-U", "postgres", "-D", replicaData, "-R", "-X", "stream", "--no-sync"]);
    await asPg(`${PGBIN}/pg_ctl`, ["start", "-w", "-t", "60", "-D", replicaData, "-l", join(dir, "replica.log"),
      "-o", `-p ${replicaPort} ${common} -c hot_standby=on -c recovery_min_apply_delay=${options.applyDelayMs}ms`]);
    started.push(replicaData);
    return { primaryUrl, replicaUrl: `postgres://postgres@127.0.0.1:${replicaPort}/postgres`, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Whether this machine can run the pair: PostgreSQL 15's server binaries are installed. */
export async function canReplicate(): Promise<boolean> {
  try {
    await run(`${PGBIN}/pg_basebackup`, ["--version"]);
    return true;
  } catch {
    return false;
  }
}

function uidOf(name: string): number {
  return Number(passwdEntry(name)[2]);
}

function gidOf(name: string): number {
  return Number(passwdEntry(name)[3]);
}

function passwdEntry(name: string): string[] {
  const line = readFileSync("/etc/passwd", "utf8").split("\n").find((entry) => entry.startsWith(`${name}:`));
  if (!line) throw new Error(`no user ${name}`);
  return line.split(":");
}
