import type { Services } from "../toolkit/services.ts";
import { leaseSeconds } from "./usage.ts";
import { releaseExpiredLeases } from "./usage-store.ts";

/** Leases ended per statement; a sweep goes on while a batch comes back full. */
const BATCH = 1_000;

/**
 * Ends expired quota leases in a worker process, giving back the messages of replies that were
 * never stored in any of `replyTables` (usage-store.ts, `releaseExpiredLeases`). A timer rather than a cron job: cron runs
 * once a minute at best, and a lease is checked within a quarter of its length (at most 30 s, at
 * least 1 s) after it ran out. Every worker process sweeps; their statements skip each other's rows.
 */
export function startLeaseSweep(services: Services, replyTables: readonly string[]): { stop: () => Promise<void> } {
  const everyMs = Math.min(30, Math.max(1, Math.ceil(leaseSeconds(services) / 4))) * 1000;
  let sweeping: Promise<void> | undefined;
  const sweep = async () => {
    let given = 0;
    for (;;) {
      const batch = await releaseExpiredLeases(services.db.knex, services.now(), BATCH, replyTables);
      given += batch.given;
      if (batch.ended < BATCH || services.stopping.aborted) break;
    }
    if (given) services.log.info({ given }, "gave back the messages of replies that were never stored");
  };
  const timer = setInterval(() => {
    sweeping ??= sweep()
      .catch((error: unknown) => services.log.warn({ err: error }, "could not sweep expired quota leases"))
      .finally(() => (sweeping = undefined));
  }, everyMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await sweeping;
    },
  };
}
