import type { PaymentsProvider, ProviderEvent, ProviderInvoice, ProviderSubscription } from "../providers/payments/types.ts";
import type { Services } from "../services.ts";
import { claimEvent, subscriptionOf, userOfCustomer } from "./store.ts";
import { applyInvoice, applySubscription } from "./sync.ts";

/** The provider events the service acts on; others are acknowledged and ignored. */
export const HANDLED_EVENTS = [
  "checkout.session.completed",
  "customer.subscription.created",
  "customer.subscription.updated",
  "customer.subscription.deleted",
  "invoice.paid",
  "invoice.payment_failed",
] as const;

export type EventOutcome = "applied" | "replayed" | "ignored";

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
 */
export async function processEvent(services: Services, event: ProviderEvent): Promise<EventOutcome> {
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

  return knex.transaction(async (trx) => {
    if (!(await claimEvent(trx, { id: event.id, provider: provider.kind, type: event.type }, services.now()))) return "replayed";
    if (!userId) return "ignored";
    const row = subscription ? await applySubscription(trx, services, userId, subscription, readAt) : await subscriptionOf(trx, userId);
    if (invoice) await applyInvoice(trx, services, userId, invoice, row);
    return subscription || invoice ? "applied" : "ignored";
  });
}
