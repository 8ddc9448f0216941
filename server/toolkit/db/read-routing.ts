import knexFactory, { type Knex } from "knex";
import type { Logger } from "../logger.ts";
import type { Notifications } from "./notifications.ts";

/**
 * Where a lag-tolerant read runs (issue 38, docs/adr/0325-reads-on-replicas-follow-the-caller-s-writes.md):
 * on a hot standby that has replayed everything its caller wrote, else on the primary.
 *
 * Two facts decide it, both kept in memory, with no statement on the read's path:
 * - how far each replica is behind: every `POLL_MS` the primary's WAL position is sampled with the
 *   time, and each replica's replay position; a replica is caught up to the latest sample its replay
 *   has passed (everything committed on the primary before that time is on the replica). One lagging
 *   by more than `maxLagMs` takes no reads.
 * - who is writing: a request that may write announces its caller on the primary (a notification
 *   every API process hears, committed before the request is handled) and again when it ends; for
 *   `maxLagMs` after the end, that caller's reads go to the primary. A replica used after that is
 *   caught up to a time after the end, so it holds the caller's writes.
 */
export interface ReadRouting {
  /**
   * The database a lag-tolerant read by `callerId` runs on; `credentialIssuedAt`, when its credential
   * says, counts as a write of theirs (a sign-up or sign-in made the token, with no caller to announce).
   */
  reader(callerId: string | undefined, credentialIssuedAt?: number): Knex;
  /** Announces that `callerId` starts a request that may write; the returned function ends it. */
  writing(callerId: string): Promise<() => void>;
  /** The replicas' state, for the readiness probe and the tests. */
  status(): { url: string; lagMs: number | null; used: boolean }[];
  close(): Promise<void>;
}

const CHANNEL = "persona_writers";
const POLL_MS = 200;
/** A write whose end was never heard (its process died) stops routing its caller after this. */
const WRITE_EXPIRES_MS = 15 * 60_000;

interface Replica {
  url: string;
  knex: Knex;
  /** Local time of the latest primary sample this replica has replayed; 0 before the first. */
  caughtUpAt: number;
}

interface Writer {
  /** Requests of this caller in progress (as heard, from every process). */
  active: number;
  /** Until when the caller's reads stay on the primary once none is in progress. */
  until: number;
  /** When the first request in progress started: an end never heard stops counting after WRITE_EXPIRES_MS. */
  since: number;
}

/** An `X/Y` WAL position as a number that orders like it. */
export function lsnValue(lsn: string): bigint {
  const [high, low] = lsn.split("/");
  return (BigInt(`0x${high}`) << 32n) | BigInt(`0x${low}`);
}

export function readRouting(options: {
  primary: Knex;
  replicaUrls: readonly string[];
  maxLagMs: number;
  poolMax: number;
  notifications: Notifications;
  log: Logger;
  now?: () => number;
}): ReadRouting {
  const { primary, maxLagMs, notifications, log } = options;
  const now = options.now ?? Date.now;
  const replicas: Replica[] = options.replicaUrls.map((url) => ({
    url,
    knex: knexFactory({
      client: "pg",
      connection: url,
      pool: { min: 0, max: options.poolMax },
      // knex logs to the console by default; a standby that cannot be reached is skipped, said at debug level.
      log: {
        warn: (message: unknown) => log.debug({ component: "knex", replica: redact(url) }, String(message)),
        error: (message: unknown) => log.debug({ component: "knex", replica: redact(url) }, String(message)),
        deprecate: () => {},
        debug: () => {},
      },
    }),
    caughtUpAt: 0,
  }));
  const writers = new Map<string, Writer>();
  /** Until when every read goes to the primary: after the notifications were interrupted, a writer may have gone unheard. */
  let unsureUntil = 0;
  let next = 0;
  let closed = false;

  const heard = (kind: string, callerId: string) => {
    const at = now();
    const writer = writers.get(callerId) ?? { active: 0, until: 0, since: at };
    if (kind === "start") {
      if (writer.active === 0) writer.since = at;
      writer.active += 1;
    } else {
      writer.active = Math.max(0, writer.active - 1);
      writer.until = at + maxLagMs;
    }
    writers.set(callerId, writer);
  };
  const routesToPrimary = (callerId: string | undefined, at: number): boolean => {
    if (at < unsureUntil) return true;
    if (callerId === undefined) return false;
    const writer = writers.get(callerId);
    if (!writer) return false;
    if (writer.active > 0 && at - writer.since < WRITE_EXPIRES_MS) return true;
    if (at < writer.until) return true;
    if (writer.active === 0 || at - writer.since >= WRITE_EXPIRES_MS) writers.delete(callerId);
    return false;
  };

  // The primary's positions with their times, newest last, kept for as long as a usable replica can lag.
  const samples: { at: number; lsn: bigint }[] = [];
  const poll = async () => {
    const at = now();
    const { rows } = await primary.raw<{ rows: { lsn: string }[] }>("SELECT pg_current_wal_lsn()::text AS lsn");
    samples.push({ at, lsn: lsnValue(rows[0]!.lsn) });
    while (samples.length > 2 && samples[1]!.at < at - maxLagMs * 2) samples.shift();
    await Promise.all(
      replicas.map(async (replica) => {
        try {
          const result = await replica.knex.raw<{ rows: { lsn: string | null }[] }>("SELECT pg_last_wal_replay_lsn()::text AS lsn");
          const replayed = result.rows[0]?.lsn;
          // Not a standby (no replay position): never used, it would not follow the primary.
          if (!replayed) return;
          const position = lsnValue(replayed);
          for (const sample of samples) if (sample.lsn <= position && sample.at > replica.caughtUpAt) replica.caughtUpAt = sample.at;
        } catch (error) {
          log.debug({ err: error, replica: redact(replica.url) }, "replica position unknown");
        }
      }),
    );
  };
  let polling: NodeJS.Timeout | undefined;
  const schedule = () => {
    if (closed) return;
    polling = setTimeout(() => {
      poll()
        .catch((error: unknown) => log.debug({ err: error }, "primary position unknown"))
        .finally(schedule);
    }, POLL_MS);
    polling.unref();
  };
  schedule();

  const listening = notifications.listen(CHANNEL, (payload) => {
    const space = payload.indexOf(" ");
    if (space > 0) heard(payload.slice(0, space), payload.slice(space + 1));
  });
  listening.catch((error: unknown) => log.error({ err: error }, "cannot hear other processes' writers: every read goes to the primary"));
  const stopReconnect = notifications.onReconnect(() => {
    unsureUntil = now() + maxLagMs;
  });

  return {
    reader(callerId, credentialIssuedAt) {
      if (replicas.length === 0) return primary;
      const at = now();
      if (routesToPrimary(callerId, at)) return primary;
      if (credentialIssuedAt !== undefined && at - credentialIssuedAt < maxLagMs) return primary;
      for (let i = 0; i < replicas.length; i++) {
        const replica = replicas[(next + i) % replicas.length]!;
        if (at - replica.caughtUpAt <= maxLagMs) {
          next = (next + i + 1) % replicas.length;
          return replica.knex;
        }
      }
      return primary;
    },
    async writing(callerId) {
      // Heard here at once; the notification tells the other processes, committed before the write runs.
      heard("start", callerId);
      let ended = false;
      const end = () => {
        if (ended) return;
        ended = true;
        heard("end", callerId);
        notifications.notify(CHANNEL, `end ${callerId}`).catch((error: unknown) => log.warn({ err: error }, "could not announce the end of a write"));
      };
      try {
        await notifications.notify(CHANNEL, `start ${callerId}`);
      } catch (error) {
        end();
        throw error;
      }
      return end;
    },
    status() {
      const at = now();
      return replicas.map((replica) => {
        const lagMs = replica.caughtUpAt === 0 ? null : at - replica.caughtUpAt;
        return { url: redact(replica.url), lagMs, used: lagMs !== null && lagMs <= maxLagMs };
      });
    },
    async close() {
      closed = true;
      clearTimeout(polling);
      stopReconnect();
      await (await listening.catch(() => undefined))?.();
      await Promise.allSettled(replicas.map((replica) => replica.knex.destroy()));
    },
  };
}

/** A connection URL without its password, for logs and the readiness probe. */
function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(invalid url)";
  }
}
