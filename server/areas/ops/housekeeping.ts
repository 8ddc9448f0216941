import type { Task, TaskList } from "graphile-worker";
import type { Services } from "../../toolkit/services.ts";
import { purgeExpiredIdempotencyKeys } from "../../toolkit/http/idempotency-store.ts";
import { purgeOutbox } from "../../toolkit/providers/email/store.ts";
import { purgeExpiredCodes } from "../auth/index.ts";

/** Short-lived rows that no area's own jobs remove: stored idempotent answers, OAuth codes, the e-mail outbox. */
export function housekeepingTasks(services: Services): TaskList {
  const purgeIdempotencyKeys: Task = async () => {
    const removed = await purgeExpiredIdempotencyKeys(services.db.knex, services.now());
    if (removed) services.log.info({ removed }, "expired idempotency keys purged");
  };
  const purgeExpiredRows: Task = async () => {
    const [codes, mails] = await Promise.all([purgeExpiredCodes(services), purgeOutbox(services.db.knex, services.now())]);
    if (codes || mails) services.log.info({ codes, mails }, "expired OAuth codes and old outbox mails purged");
  };
  return { idempotency_purge: purgeIdempotencyKeys, expired_rows_purge: purgeExpiredRows };
}

export const housekeepingCrontab = ["0 * * * * idempotency_purge", "30 * * * * expired_rows_purge"];
