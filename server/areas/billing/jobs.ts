import type { Task, TaskList } from "graphile-worker";
import type { ProviderSubscription } from "../../toolkit/providers/payments/types.ts";
import type { Services } from "../../toolkit/services.ts";
import { paymentsOf } from "./events.ts";
import { dueSubscriptions, purgeEvents, subscriptionOf, type SubscriptionRow } from "./store.ts";
import { applySubscription, PERIOD_END_TASK } from "./sync.ts";
import { QUOTA_RELEASE_TASK, recordExpiredLease } from "../../quota/usage-store.ts";

export const SWEEP_TASK = "billing_sweep";
/** The sweep catches what the per-subscription job missed (a worker down at the moment, a provider late). */
export const billingCrontab = [`*/15 * * * * ${SWEEP_TASK}`];

const EVENT_IDS_KEPT_MS = 30 * 24 * 60 * 60 * 1000;
const SWEEP_BATCH = 500;

/** The state last read from the provider, for when it cannot be read now. */
function recorded(row: SubscriptionRow): ProviderSubscription {
  return {
    id: row.provider_subscription_id,
    customerId: row.customer_id,
    status: row.provider_status,
    plan: row.provider_plan as ProviderSubscription["plan"],
    interval: row.interval,
    currentPeriodStart: row.current_period_start,
    currentPeriodEnd: row.current_period_end,
    cancelAt: row.cancel_at,
    canceledAt: row.canceled_at,
    endedAt: row.ended_at,
    scheduled: row.scheduled_plan && row.scheduled_change_at ? { plan: row.scheduled_plan as ProviderSubscription["plan"], at: row.scheduled_change_at } : null,
    createdAt: row.created_at,
  };
}

/**
 * Brings due subscriptions to the state they have now: renewals, scheduled downgrades and ended
 * cancellations. The offline provider first moves its own clock (as Stripe's runs by itself); then
 * each due subscription is read again from the provider and recorded, which lowers the limits of a
 * downgrade or cancellation that took effect. When the provider cannot be read, what it said last
 * is applied at the present moment: limits follow the plan at the period end either way.
 */
export async function settleDueSubscriptions(services: Services, userId?: string): Promise<number> {
  const provider = paymentsOf(services);
  const now = services.now();
  await provider.local?.advance(now);
  const { knex } = services.db;
  const candidates = userId ? [await subscriptionOf(knex, userId)] : await dueSubscriptions(knex, now, SWEEP_BATCH);
  let settled = 0;
  for (const row of candidates) {
    if (!row || row.plan === "free") continue;
    let state: ProviderSubscription | undefined;
    let readAt = new Date();
    try {
      state = await provider.retrieveSubscription(row.provider_subscription_id);
    } catch (error) {
      services.log.warn({ err: error, subscription: row.provider_subscription_id }, "the payment provider could not be read at the period end; its last state is applied");
    }
    if (!state) [state, readAt] = [recorded(row), row.provider_read_at];
    await knex.transaction((trx) => applySubscription(trx, services, row.user_id, state, readAt));
    settled += 1;
  }
  return settled;
}

export function billingTasks(services: Services): TaskList {
  const periodEnd: Task = async (payload) => {
    const userId = (payload as { user_id?: unknown } | null)?.user_id;
    if (typeof userId === "string") await settleDueSubscriptions(services, userId);
  };
  const sweep: Task = async () => {
    const settled = await settleDueSubscriptions(services);
    const purged = await purgeEvents(services.db.knex, new Date(services.now().getTime() - EVENT_IDS_KEPT_MS));
    if (settled || purged) services.log.info({ settled, purged }, "billing sweep");
  };
  // Queued by a process of the version before quota leases were rows (migration 0023), during an
  // upgrade: the sweep (lease-sweep.ts) takes its reservation over.
  const quotaRelease: Task = async (payload) => {
    const { user_id: userId, period_start: periodStart, reply_id: replyId } = (payload ?? {}) as Record<string, unknown>;
    if (typeof userId !== "string" || typeof periodStart !== "string" || typeof replyId !== "string") return;
    await recordExpiredLease(services.db.knex, { userId, periodStart, replyId }, services.now());
  };
  return { [PERIOD_END_TASK]: periodEnd, [SWEEP_TASK]: sweep, [QUOTA_RELEASE_TASK]: quotaRelease };
}
