import type { Task, TaskList } from "graphile-worker";
import type { Services } from "./services.ts";
import { accountDataSections } from "./account-sections.ts";
import { emailTasks } from "./auth/account/email.ts";
import { accountCrontab, accountTasks } from "./auth/account/jobs.ts";
import { purgeExpiredCodes } from "./auth/oauth/flow.ts";
import { purgeOutbox } from "./providers/email/store.ts";
import { purgeExpiredIdempotencyKeys } from "./http/idempotency-store.ts";
import { knowledgeTasks } from "./knowledge/jobs.ts";
import { avatarTasks } from "./personas/avatar-job.ts";
import { personaTasks } from "./personas/greeting-job.ts";
import { trendingCrontab, trendingTasks } from "./personas/trending.ts";
import { titleTask } from "./conversations/title-job.ts";
import { summaryTask } from "./conversations/memory-job.ts";
import { deltasPurgeTask, DELTAS_PURGE_TASK, generationCrontab } from "./conversations/generation.ts";
import { webhookCrontab, webhookTasks } from "./webhooks/jobs.ts";
import { billingCrontab, billingTasks } from "./billing/jobs.ts";
import { startLeaseSweep } from "./billing/lease-sweep.ts";
import { integrationCrontab, integrationTasks } from "./integrations/jobs.ts";
import { startGateways } from "./integrations/gateway/supervisor.ts";
import { roomEventsCrontab, roomEventTasks } from "./rooms/jobs.ts";

/** Tasks of every area, by name. Each area adds its own here as it lands. */
export function taskList(services: Services): TaskList {
  const purgeIdempotencyKeys: Task = async () => {
    const removed = await purgeExpiredIdempotencyKeys(services.db.knex, services.now());
    if (removed) services.log.info({ removed }, "expired idempotency keys purged");
  };
  // Short-lived rows that nothing else removes: OAuth codes and the e-mail outbox.
  const purgeExpiredRows: Task = async () => {
    const [codes, mails] = await Promise.all([purgeExpiredCodes(services), purgeOutbox(services.db.knex, services.now())]);
    if (codes || mails) services.log.info({ codes, mails }, "expired OAuth codes and old outbox mails purged");
  };
  return { idempotency_purge: purgeIdempotencyKeys, expired_rows_purge: purgeExpiredRows, ...accountTasks(services, accountDataSections), ...emailTasks(services), ...personaTasks(services), ...avatarTasks(services), ...trendingTasks(services), ...knowledgeTasks(services), conversation_title: titleTask(services), ...webhookTasks(services), ...integrationTasks(services), ...billingTasks(services), ...roomEventTasks(services), conversation_summary: summaryTask(services), [DELTAS_PURGE_TASK]: deltasPurgeTask(services) };
}

/** Recurring schedule (graphile-worker crontab syntax). */
export const crontab = ["0 * * * * idempotency_purge", "30 * * * * expired_rows_purge", ...accountCrontab, ...trendingCrontab, ...webhookCrontab, ...integrationCrontab, ...billingCrontab, ...roomEventsCrontab, ...generationCrontab].join("\n");

/** What a worker process runs besides its jobs: chat platform gateways, and the quota lease sweep. */
export function startConnections(services: Services): { stop: () => Promise<void> } {
  const running = [startGateways(services), startLeaseSweep(services)];
  return { stop: async () => void (await Promise.all(running.map((part) => part.stop()))) };
}
