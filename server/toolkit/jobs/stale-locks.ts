import type pg from "pg";
import type { Database } from "../db/database.ts";
import type { Logger } from "../logger.ts";

/**
 * graphile-worker frees a job locked by a worker that died (SIGKILL, OOM, power loss) only after
 * four hours, so a knowledge document would stay `processing` that long. Each worker process
 * therefore holds a session advisory lock per worker pool while it lives; a sweep frees the jobs
 * of pools whose lock nobody holds any more. Locks younger than `GRACE` are left alone: a new
 * pool may lock a job a moment before its advisory lock is taken.
 *
 * On the embedded database every connection shares PGlite's one session, so advisory locks say
 * nothing about liveness; there the process holding the data dir is the only one that can have
 * run jobs before it started, and it frees every lock once, before its worker starts.
 */

const LOCK_CLASS = 0x70657273; // "pers": keeps these keys apart from other advisory locks
const GRACE = "10 seconds";
const SWEEP_MS = 10_000;

const lockedPools = (client: pg.PoolClient | pg.Pool, grace: string | null) =>
  client.query<{ locked_by: string }>(
    `SELECT DISTINCT locked_by FROM graphile_worker._private_jobs
      WHERE locked_by IS NOT NULL AND ($1::interval IS NULL OR locked_at < now() - $1::interval)`,
    [grace],
  );

const unlock = (pool: pg.Pool, workerIds: string[]) =>
  pool.query("SELECT graphile_worker.force_unlock_workers($1::text[])", [workerIds]);

export interface LivenessLocks {
  /** Marks a worker pool of this process as alive for as long as the process lives. */
  hold: (poolId: string) => Promise<void>;
  /** Marks pools of this process as dead (their runner stopped on its own) and frees their jobs. */
  release: (poolIds: readonly string[]) => Promise<void>;
  stop: () => Promise<void>;
}

export async function freeDeadWorkersLocks(database: Database, log: Logger): Promise<LivenessLocks> {
  // Session advisory locks: on the direct connection, never through a transaction-mode pooler.
  const db = { kind: database.kind, pool: database.sessionPool };
  if (db.kind === "embedded") {
    const pools = (await lockedPools(db.pool, null)).rows.map((row) => row.locked_by);
    if (pools.length > 0) {
      await unlock(db.pool, pools);
      log.warn({ workers: pools }, "freed the jobs of workers that died before this start");
    }
    // The only process on this database: a pool of its own that stopped has nobody else running its jobs.
    return {
      hold: async () => undefined,
      release: async (poolIds) => {
        if (poolIds.length > 0) await unlock(db.pool, [...poolIds]);
      },
      stop: async () => undefined,
    };
  }
  const held: string[] = [];
  let holder = await db.pool.connect();
  // A lost connection (database restart) drops the locks: take them again on a new one.
  let stopped = false;
  const rehold = (error: Error) => {
    // pg may report one broken connection more than once: replace it once.
    const lost = holder;
    lost.removeAllListeners("error");
    lost.on("error", () => undefined);
    try {
      lost.release(true);
    } catch {
      // already given back
    }
    if (stopped) return;
    log.warn({ err: error }, "worker liveness connection lost; reconnecting");
    void (async () => {
      while (!stopped) {
        try {
          const replacement = await db.pool.connect();
          if (stopped) return replacement.release();
          holder = replacement;
          holder.on("error", rehold);
          for (const id of held) await holder.query("SELECT pg_advisory_lock($1, hashtext($2))", [LOCK_CLASS, id]);
          return;
        } catch {
          await new Promise((wait) => setTimeout(wait, 1_000));
        }
      }
    })();
  };
  holder.on("error", rehold);
  let sharedSession = false;
  const sweep = async () => {
    if (sharedSession) return;
    const candidates = (await lockedPools(db.pool, GRACE)).rows.map((row) => row.locked_by);
    if (candidates.length === 0) return;
    const prober = await db.pool.connect();
    const dead: string[] = [];
    try {
      for (const id of candidates) {
        const { rows } = await prober.query<{ free: boolean }>("SELECT pg_try_advisory_lock($1, hashtext($2)) AS free", [LOCK_CLASS, id]);
        if (!rows[0]!.free) continue;
        dead.push(id);
        await prober.query("SELECT pg_advisory_unlock($1, hashtext($2))", [LOCK_CLASS, id]);
      }
    } finally {
      prober.release();
    }
    if (dead.length === 0) return;
    await unlock(db.pool, dead);
    log.warn({ workers: dead }, "freed the jobs of workers that died");
  };
  const timer = setInterval(() => void sweep().catch((error: unknown) => log.warn({ err: error }, "stale job lock sweep failed")), SWEEP_MS);
  timer.unref();
  return {
    hold: async (poolId) => {
      held.push(poolId);
      await holder.query("SELECT pg_advisory_lock($1, hashtext($2))", [LOCK_CLASS, poolId]);
      // A server that shares one session between connections (PGlite behind its socket) grants
      // the same lock twice: liveness cannot be told there, so the sweep stays off.
      const probe = await db.pool.connect();
      try {
        const { rows } = await probe.query<{ free: boolean }>("SELECT pg_try_advisory_lock($1, hashtext($2)) AS free", [LOCK_CLASS, poolId]);
        if (rows[0]!.free) {
          sharedSession = true;
          await probe.query("SELECT pg_advisory_unlock($1, hashtext($2))", [LOCK_CLASS, poolId]);
        }
      } finally {
        probe.release();
      }
      await sweep();
    },
    release: async (poolIds) => {
      if (poolIds.length === 0) return;
      for (const id of poolIds) if (held.includes(id)) held.splice(held.indexOf(id), 1);
      // A connection lost meanwhile took the locks with it; on the one held now they are let go.
      for (const id of poolIds) await holder.query("SELECT pg_advisory_unlock($1, hashtext($2))", [LOCK_CLASS, id]).catch(() => undefined);
      await unlock(db.pool, [...poolIds]);
    },
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      holder.removeAllListeners("error");
      holder.on("error", () => undefined);
      try {
        holder.release();
      } catch {
        // lost with the database and given back already
      }
    },
  };
}
