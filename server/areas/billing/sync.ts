import type { Knex } from "knex";
import { v7 as uuidv7 } from "uuid";
import { addJobIn } from "../../toolkit/db/jobs.ts";
import { recordEvent } from "../../toolkit/events/outbox.ts";
import type { ProviderInvoice, ProviderSubscription } from "../../toolkit/providers/payments/types.ts";
import type { Services } from "../../toolkit/services.ts";
import {
  deleteSubscription,
  insertSubscription,
  lockSubscriptionOf,
  lockUser,
  replaceSubscription,
  setUserPlan,
  upsertInvoice,
  type SubscriptionRow,
} from "./store.ts";

// The one place where what the payment provider says becomes the account's state. Everything that
// learns a subscription's state (webhook events, the offline provider's events, the answers of
// plan changes and cancellations, the period-end job) hands the state it read here, so the rules
// hold whichever way the news came and in whatever order.

/** Provider statuses in which the subscription gives nothing (it ended, or was never paid for). */
const GIVES_NOTHING = new Set(["canceled", "incomplete", "incomplete_expired", "unpaid", "paused"]);

export const PERIOD_END_TASK = "billing_period_end";

/**
 * News of a second live subscription for an account whose own subscription is live (two checkouts
 * paid, issue 31 M4). It is not written: the event processor cancels and refunds it.
 */
export class SecondSubscriptionError extends Error {
  override name = "SecondSubscriptionError";
  readonly kept: string;
  readonly second: string;
  constructor(kept: string, second: string) {
    super(`The account already has the live subscription ${kept}; ${second} is a second one`);
    this.kept = kept;
    this.second = second;
  }
}

/**
 * The plan the account has at `now` by the provider's state. The provider moves a subscription at
 * its period end a little late (and its event later still); what it has scheduled for a moment
 * that has passed has happened, as far as limits go.
 */
export function effectivePlan(subscription: ProviderSubscription, now: Date): string {
  if (GIVES_NOTHING.has(subscription.status)) return "free";
  if (subscription.endedAt && subscription.endedAt <= now) return "free";
  if (subscription.cancelAt && subscription.cancelAt <= now) return "free";
  if (subscription.scheduled && subscription.scheduled.at <= now) return subscription.scheduled.plan;
  return subscription.plan;
}

function rowFields(provider: string, subscription: ProviderSubscription, now: Date, readAt: Date) {
  const plan = effectivePlan(subscription, now);
  const pending = subscription.scheduled && subscription.scheduled.at > now && plan !== "free" ? subscription.scheduled : null;
  const endedAt = subscription.endedAt ?? (plan === "free" ? (subscription.cancelAt && subscription.cancelAt <= now ? subscription.cancelAt : now) : null);
  return {
    provider,
    provider_subscription_id: subscription.id,
    customer_id: subscription.customerId,
    plan,
    interval: subscription.interval,
    provider_status: subscription.status,
    provider_plan: subscription.plan,
    current_period_start: subscription.currentPeriodStart,
    current_period_end: subscription.currentPeriodEnd,
    cancel_at: subscription.cancelAt,
    canceled_at: subscription.canceledAt,
    scheduled_plan: pending?.plan ?? null,
    scheduled_change_at: pending?.at ?? null,
    ended_at: plan === "free" ? endedAt : null,
    provider_read_at: readAt,
    updated_at: now,
  };
}

const eventData = (row: SubscriptionRow) => ({
  subscription_id: row.id,
  plan: row.plan,
  interval: row.interval,
  current_period_end: row.current_period_end.toISOString(),
  cancel_at: row.cancel_at?.toISOString() ?? null,
  canceled_at: row.canceled_at?.toISOString() ?? null,
});

/**
 * Writes the provider's state of the user's subscription, read at `readAt`, inside `trx`: the
 * record, the plan the account's limits follow, `subscription.created` / `subscription.cancelled`
 * in the event outbox when the state crosses into them, and the job that acts at the next period
 * end. A state read before the one already written is ignored, as is news of a subscription the
 * account has since replaced. A second live subscription while the account's own is live throws
 * `SecondSubscriptionError`, unless `replaces` names the account's one (it has ended at the
 * provider). Answers the record as it stands.
 */
export async function applySubscription(
  trx: Knex.Transaction,
  services: Services,
  userId: string,
  subscription: ProviderSubscription,
  readAt: Date,
  options: { replaces?: string | undefined } = {},
): Promise<SubscriptionRow | undefined> {
  const now = services.now();
  const provider = services.providers.payments.kind;
  if (!(await lockUser(trx, userId))) return undefined;
  const current = await lockSubscriptionOf(trx, userId);
  const fields = rowFields(provider, subscription, now, readAt);
  const isNew = !current || current.provider_subscription_id !== subscription.id || current.provider !== provider;

  if (current && !isNew && current.provider_read_at > readAt) return current;
  // An ended subscription that is not the account's current one is old news.
  if (isNew && fields.plan === "free") return current;
  if (current && isNew && current.ended_at === null) {
    if (current.provider === provider && options.replaces !== current.provider_subscription_id) throw new SecondSubscriptionError(current.provider_subscription_id, subscription.id);
    // Another provider's subscription (the service moved to Stripe), or one the provider no longer has.
    services.log.warn({ userId, kept: subscription.id, replaced: current.provider_subscription_id }, "a live subscription was replaced by a new one");
  }

  let row: SubscriptionRow;
  if (isNew) {
    if (current) await deleteSubscription(trx, current.id);
    row = { id: uuidv7(), user_id: userId, ...fields, created_at: now };
    await insertSubscription(trx, row);
  } else {
    row = { ...current, ...fields };
    await replaceSubscription(trx, current.id, fields);
  }

  const wasPlan = isNew ? "free" : current.plan;
  if (row.plan !== wasPlan || isNew) await setUserPlan(trx, userId, row.plan === "free" ? services.config.defaultPlan : row.plan);
  if (isNew && row.plan !== "free") await recordEvent(trx, { userId, type: "subscription.created", data: eventData(row), at: now });
  const wasCancelled = !isNew && (current.canceled_at !== null || current.plan === "free");
  if (!wasCancelled && (row.canceled_at !== null || row.plan === "free")) {
    await recordEvent(trx, { userId, type: "subscription.cancelled", data: eventData(row), at: now });
  }
  if (row.plan !== "free") {
    // Renewals, downgrades and cancellations all happen at the period end: one job per subscription
    // then. A moment already past is the provider running late; the sweep retries those.
    const due = [row.current_period_end, row.scheduled_change_at, row.cancel_at].filter((at): at is Date => at !== null).sort((a, b) => a.getTime() - b.getTime())[0]!;
    if (due > now) await addJobIn(trx, PERIOD_END_TASK, { user_id: userId }, { runAt: due, jobKey: `${PERIOD_END_TASK}:${row.id}`, maxAttempts: 10 });
  }
  return row;
}

/** Mirrors an invoice of the user's; the plan and interval fall back to the subscription's when its lines name none. */
export async function applyInvoice(
  knex: Knex,
  services: Services,
  userId: string,
  invoice: ProviderInvoice,
  fallback: { plan: string; interval: string } | undefined,
): Promise<void> {
  const plan = invoice.plan ?? (fallback && fallback.plan !== "free" ? fallback.plan : undefined);
  const interval = invoice.interval ?? fallback?.interval;
  // An invoice for nothing the service sells (an ad-hoc charge made in Stripe's dashboard) is not the service's to show.
  if (!plan || !interval) return;
  const now = services.now();
  await upsertInvoice(knex, {
    id: uuidv7(),
    user_id: userId,
    provider: services.providers.payments.kind,
    provider_invoice_id: invoice.id,
    number: invoice.number ?? invoice.id,
    amount: invoice.amount,
    currency: invoice.currency,
    status: invoice.status,
    plan,
    interval,
    period_start: invoice.periodStart,
    period_end: invoice.periodEnd,
    paid_at: invoice.paidAt,
    invoice_pdf: invoice.pdfUrl,
    created_at: invoice.createdAt,
    updated_at: now,
  });
}
