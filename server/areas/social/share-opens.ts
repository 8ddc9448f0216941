import type { Database } from "../../toolkit/db/database.ts";
import type { Logger } from "../../toolkit/logger.ts";
import type { Services } from "../../toolkit/services.ts";
import type { ShareTargets } from "./share-targets.ts";
import { addShareOpens, type ShareOpens } from "./store.ts";

/**
 * Counts share-link opens without making the redirect wait for a write. An open is added to this
 * process's pending counts; BATCH_MS after the first pending open, one UPDATE writes everything
 * pending, and opens arriving while it runs go into the next batch. So a process writes at most
 * about 1000 / BATCH_MS batches a second whatever the open rate. Counts not yet written when the
 * process dies are lost (at most one batch): the price of never slowing the redirect, acceptable
 * for analytics.
 */
const BATCH_MS = 200;

export class ShareOpenCounter {
  private pending = new Map<string, ShareOpens>();
  private writing: Promise<void> | undefined;

  private readonly services: { db: Pick<Database, "knex">; log: Logger };

  constructor(services: { db: Pick<Database, "knex">; log: Logger }) {
    this.services = services;
  }

  add(shareId: string, at: Date): void {
    const entry = this.pending.get(shareId);
    if (entry) {
      entry.opens += 1;
      if (at > entry.lastAt) entry.lastAt = at;
    } else {
      this.pending.set(shareId, { id: shareId, opens: 1, lastAt: at });
    }
    this.writing ??= this.writeAll();
  }

  /** Resolves once every open counted so far is written (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.writing) await this.writing;
  }

  private async writeAll(): Promise<void> {
    while (this.pending.size) {
      await new Promise((resolve) => setTimeout(resolve, BATCH_MS).unref());
      const batch = [...this.pending.values()];
      this.pending = new Map();
      try {
        await addShareOpens(this.services.db.knex, batch);
      } catch (error) {
        this.services.log.warn({ err: error, links: batch.length }, "share opens could not be counted");
      }
    }
    this.writing = undefined;
  }
}

declare module "../../toolkit/services.ts" {
  interface AreaRegistries {
    /** Share-link opens waiting for their batch write. */
    shareOpens: ShareOpenCounter;
    /** Resolved share links, trusted for a few seconds. */
    shareTargets: ShareTargets;
  }
}

/** The counter of this service instance (one per process; tests may run several). */
export function shareOpenCounter(services: Services): ShareOpenCounter {
  return services.areas.shareOpens;
}
