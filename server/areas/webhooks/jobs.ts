import type { Task, TaskList } from "graphile-worker";
import type { Services } from "../../toolkit/services.ts";
import { DELIVER_TASK, deliverDue, FANOUT_TASK, fanOut, sweep, SWEEP_TASK } from "./delivery.ts";
import { purgeDeliveriesBefore } from "./store.ts";

/** The delivery log keeps 30 days (docs/adr/0213-the-delivery-log-is-kept-30-days-webhooks-in-the-export.md). */
export const DELIVERY_LOG_DAYS = 30;
const PURGE_TASK = "webhooks_purge";

export function webhookTasks(services: Services): TaskList {
  const fanout: Task = async () => fanOut(services);
  const deliver: Task = async (payload) => {
    await deliverDue(services, { deliveryId: (payload as { delivery_id: string }).delivery_id });
  };
  const purge: Task = async () => {
    const removed = await purgeDeliveriesBefore(services.db.knex, new Date(services.now().getTime() - DELIVERY_LOG_DAYS * 86_400_000));
    if (removed) services.log.info({ removed }, "webhook deliveries older than 30 days purged");
  };
  return { [FANOUT_TASK]: fanout, [DELIVER_TASK]: deliver, [SWEEP_TASK]: async () => sweep(services), [PURGE_TASK]: purge };
}

/** The sweep every minute is the safety net under the self-scheduled one; the purge runs nightly. */
export const webhookCrontab = [`* * * * * ${SWEEP_TASK}`, `17 3 * * * ${PURGE_TASK}`];
