import { v7 as uuidv7 } from "uuid";
import type { PaymentsProvider, ProviderEvent, ProviderInvoice, ProviderSubscription } from "../../toolkit/providers/payments/types.ts";
import type { Services } from "../../toolkit/services.ts";
import { claimEvent, isDuplicateSubscription, recordDuplicateSubscription, subscriptionOf, userOfCustomer, type SubscriptionRow } from "./store.ts";
import { applyInvoice, applySubscription, effectivePlan, SecondSubscriptionError } from "./sync.ts";

/** The provider events the service acts on; others are acknowledged and ignored. */
export const HANDLED_EVENTS = [
  "checkout.session.completed",
  "customer.subscription.created",
  "customer.subscription.updated",
  "customer.subscription.deleted",
  "invoice.paid",
  "invoice.payment_failed",
] as const;

export type EventOutcome = "applied" | "replayed" | "ignored" | "second_subscription_cancelled";

/** How often an event is processed again when a second subscription turns up inside its transaction. */
const SECOND_SUBSCRIPTION_ATTEMPTS = 3;

const bound = new WeakSet<PaymentsProvider>();

/**
 * The configured payments provider, with the offline provider's events wired into the processor
 * (it has no webhook to send them to). Billing code reaches the provider only through this.
 */
export function paymentsOf(services: Services): PaymentsProvider {
  const provider = services.providers.payments;
  if (!bound.has(provider)) {
    bound.add(provider);
    provider.onEvent(async (event) => {
      await processEvent(services, event);
    });
  }
  return provider;
}

/**
 * Processes one provider event, from the webhook or the offline provider. The event says only what
 * changed; the changed object's current state is read again from the provider, so events arriving
 * late, out of order or twice all end in the provider's present state. The event id is recorded in
 * the transaction that applies it: a replay changes nothing.
 *
 * A live subscription other than the account's live one is a second purchase (two checkouts paid,
 * issue 31 M4): its payments are refunded and it is ended at the provider before the event is
 * recorded, so a failure there fails the event and the provider sends it again.
 */
export async function processEvent(services: Services, event: ProviderEvent): Promise<EventOutcome> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await processOnce(services, event);
    } catch (error) {
      // The account's first subscription was written between this event's check and its
      // transaction (both subscriptions' news at once): from the start again, now as a second one.
      if (!(error instanceof SecondSubscriptionError) || attempt >= SECOND_SUBSCRIPTION_ATTEMPTS) throw error;
      services.log.info({ event: event.id, kept: error.kept, second: error.second }, "news of a second subscription arrived while the first was being written; processing it again");
    }
  }
}

async function processOnce(services: Services, event: ProviderEvent): Promise<EventOutcome> {
  const provider = paymentsOf(services);
  const { knex } = services.db;
  const objectId = typeof event.data?.object?.id === "string" ? event.data.object.id : undefined;
  const readAt = new Date();
  let subscription: ProviderSubscription | undefined;
  let invoice: ProviderInvoice | undefined;

  if (objectId && (HANDLED_EVENTS as readonly string[]).includes(event.type)) {
    if (event.type === "checkout.session.completed") {
      const checkout = await provider.retrieveCheckout(objectId);
      if (checkout?.subscriptionId) subscription = await provider.retrieveSubscription(checkout.subscriptionId);
    } else if (event.type.startsWith("customer.subscription.")) {
      subscription = await provider.retrieveSubscription(objectId);
    } else {
      invoice = await provider.retrieveInvoice(objectId);
      if (invoice?.subscriptionId) subscription = await provider.retrieveSubscription(invoice.subscriptionId);
    }
  }
  const customerId = subscription?.customerId ?? invoice?.customerId;
  const userId = customerId ? await userOfCustomer(knex, provider.kind, customerId) : undefined;

  let replaces: string | undefined;
  if (userId && subscription) {
    const second = await secondSubscriptionCheck(services, provider, userId, subscription);
    if (second.kept) return cancelSecondSubscription(services, provider, event, userId, subscription, second.kept);
    replaces = second.replaces;
  }

  return knex.transaction(async (trx) => {
    if (!(await claimEvent(trx, { id: event.id, provider: provider.kind, type: event.type }, services.now()))) return "replayed";
    if (!userId) return "ignored";
    const row = subscription ? await applySubscription(trx, services, userId, subscription, readAt, { replaces }) : await subscriptionOf(trx, userId);
    // A refunded second subscription's invoices are not the account's to show; its record is.
    if (invoice && !(await isDuplicateSubscription(trx, provider.kind, invoice.subscriptionId))) await applyInvoice(trx, services, userId, invoice, row);
    return subscription || invoice ? "applied" : "ignored";
  });
}

/**
 * Whether `subscription` is a second live one of the account: answers the account's live record to
 * keep; or, when the account's subscription has ended at the provider with its news still on the
 * way, records that end and answers that the new one replaces it. The subscription the account has
 * is kept, whichever was bought first: it is the one its limits, plan changes and invoices follow.
 */
async function secondSubscriptionCheck(
  services: Services,
  provider: PaymentsProvider,
  userId: string,
  subscription: ProviderSubscription,
): Promise<{ kept?: SubscriptionRow; replaces?: string }> {
  const now = services.now();
  if (effectivePlan(subscription, now) === "free") return {};
  const current = await subscriptionOf(services.db.knex, userId);
  if (!current || current.ended_at !== null || current.provider !== provider.kind || current.provider_subscription_id === subscription.id) return {};
  const readAt = new Date();
  const own = await provider.retrieveSubscription(current.provider_subscription_id);
  if (own && effectivePlan(own, now) !== "free") return { kept: current };
  if (own) await services.db.knex.transaction((trx) => applySubscription(trx, services, userId, own, readAt));
  return { replaces: current.provider_subscription_id };
}

/** Refunds and ends a second subscription at the provider, then records it with the event; a log line says what was done. */
async function cancelSecondSubscription(
  services: Services,
  provider: PaymentsProvider,
  event: ProviderEvent,
  userId: string,
  second: ProviderSubscription,
  kept: SubscriptionRow,
): Promise<EventOutcome> {
  const now = services.now();
  const refunds = await provider.refundAndCancel(second.id, now);
  const made = refunds.filter((refund) => refund.id !== null);
  const refunded = made.reduce((sum, refund) => sum + refund.amount, 0);
  const recorded = await services.db.knex.transaction(async (trx) => {
    await claimEvent(trx, { id: event.id, provider: provider.kind, type: event.type }, now);
    return recordDuplicateSubscription(trx, {
      id: uuidv7(),
      user_id: userId,
      provider: provider.kind,
      provider_subscription_id: second.id,
      kept_subscription_id: kept.provider_subscription_id,
      event_id: event.id,
      event_type: event.type,
      refunds: refunds.map((refund) => ({ id: refund.id, invoice: refund.invoiceId, amount: refund.amount, currency: refund.currency, failure: refund.failure })),
      refunded_amount: refunded,
      currency: refunds[0]?.currency ?? null,
      cancelled_at: now,
      created_at: now,
    });
  });
  if (recorded) {
    const fields = { userId, event: event.id, kept: kept.provider_subscription_id, cancelled: second.id, refunded, refunds: refunds.map(({ id, invoiceId, amount, failure }) => ({ id, invoice: invoiceId, amount, failure })) };
    if (refunds.some((refund) => refund.failure)) {
      services.log.error(fields, "a second subscription of an account was cancelled, but the payment provider refused to refund a payment of it: refund it by hand");
    } else {
      services.log.warn(fields, "a second subscription of an account was cancelled and its payments refunded");
    }
  }
  return "second_subscription_cancelled";
}
