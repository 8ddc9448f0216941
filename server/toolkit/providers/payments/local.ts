import { randomBytes } from "node:crypto";
import type { Knex } from "knex";
import { v7 as uuidv7 } from "uuid";
import { CURRENCY, periodEnd, PRICES } from "./catalog.ts";
import { dueLocalSubscriptions, getLocalObject, hasLiveLocalSubscription, localObjectsOf, lockLocalCustomers, nextLocalInvoiceNumber, putLocalObject } from "./local-store.ts";
import {
  PaymentSignatureError,
  type BillingInterval,
  type CheckoutInput,
  type OfflineCheckout,
  type OfflinePayments,
  type PaidPlan,
  type PaymentsProvider,
  type PlanChange,
  type PortalLink,
  type ProviderCheckout,
  type ProviderEvent,
  type ProviderInvoice,
  type ProviderRefund,
  type ProviderSubscription,
} from "./types.ts";

// The offline provider keeps Stripe's objects and transitions (Unix-second timestamps, snake_case
// fields, the same event types), so the one event processor serves both providers.

interface Customer {
  id: string;
  object: "customer";
  email: string;
  metadata: { persona_user_id: string };
}

interface CheckoutSession {
  id: string;
  object: "checkout.session";
  customer: string;
  client_reference_id: string;
  plan: PaidPlan;
  interval: BillingInterval;
  amount_total: number;
  currency: string;
  success_url: string;
  cancel_url: string;
  status: "open" | "complete" | "expired";
  subscription: string | null;
  expires_at: number;
  created: number;
}

interface Subscription {
  id: string;
  object: "subscription";
  customer: string;
  status: "active" | "canceled";
  plan: PaidPlan;
  interval: BillingInterval;
  current_period_start: number;
  current_period_end: number;
  cancel_at_period_end: boolean;
  cancel_at: number | null;
  canceled_at: number | null;
  ended_at: number | null;
  /** The subscription schedule's next phase: a downgrade at the period end. */
  schedule: { plan: PaidPlan; at: number } | null;
  created: number;
}

interface Invoice {
  id: string;
  object: "invoice";
  customer: string;
  subscription: string | null;
  number: string;
  total: number;
  currency: string;
  status: "paid";
  plan: PaidPlan;
  interval: BillingInterval;
  period_start: number;
  period_end: number;
  paid_at: number;
  created: number;
}

/** Checkout pages stay open as long as Stripe's do by default. */
const CHECKOUT_TTL_S = 24 * 60 * 60;
const PORTAL_TTL_MS = 5 * 60_000;

const seconds = (at: Date) => Math.floor(at.getTime() / 1000);
const toDate = (value: number) => new Date(value * 1000);
const toDateOrNull = (value: number | null) => (value === null ? null : toDate(value));
const localId = (prefix: string) => `${prefix}_local_${randomBytes(12).toString("hex")}`;

const CHECKOUT_REFUSALS = {
  expired: "This checkout has expired: start a new one",
  complete: "This checkout is already complete",
  // Issue 31 M4: two checkouts opened while free, both paid, made two subscriptions.
  subscribed: "Your account already has a subscription, so this checkout cannot be paid and nothing was charged: change plans with PUT /v1/billing/subscription",
} as const;

export class OfflineCheckoutError extends Error {
  override name = "OfflineCheckoutError";
  readonly reason: keyof typeof CHECKOUT_REFUSALS;
  constructor(reason: keyof typeof CHECKOUT_REFUSALS) {
    super(CHECKOUT_REFUSALS[reason]);
    this.reason = reason;
  }
}

/**
 * The payments provider of a server without a Stripe account: the same states and events, the
 * buyer "pays" on a local checkout page (no money moves), and periods renew when `advance` is run
 * (the billing area's period-end job) rather than by Stripe's clock.
 */
export class LocalPayments implements PaymentsProvider, OfflinePayments {
  readonly kind = "local";
  readonly local: OfflinePayments = this;
  readonly #knex: Knex;
  readonly #checkoutUrl: (id: string) => string;
  readonly #portalUrl: string;
  #listener: ((event: ProviderEvent) => Promise<void>) | undefined;

  constructor(knex: Knex, urls: { checkout: (id: string) => string; portal: string }) {
    this.#knex = knex;
    this.#checkoutUrl = urls.checkout;
    this.#portalUrl = urls.portal;
  }

  onEvent(listener: (event: ProviderEvent) => Promise<void>): void {
    this.#listener = listener;
  }

  async createCustomer(input: { userId: string; email: string }): Promise<string> {
    const customer: Customer = { id: localId("cus"), object: "customer", email: input.email, metadata: { persona_user_id: input.userId } };
    await putLocalObject(this.#knex, { id: customer.id, kind: "customer", userId: input.userId, data: customer }, new Date());
    return customer.id;
  }

  async createCheckout(input: CheckoutInput): Promise<ProviderCheckout> {
    const session: CheckoutSession = {
      id: uuidv7(),
      object: "checkout.session",
      customer: input.customerId,
      client_reference_id: input.userId,
      plan: input.plan,
      interval: input.interval,
      amount_total: PRICES[input.plan][input.interval],
      currency: CURRENCY,
      success_url: input.successUrl,
      cancel_url: input.cancelUrl,
      status: "open",
      subscription: null,
      expires_at: seconds(input.at) + CHECKOUT_TTL_S,
      created: seconds(input.at),
    };
    await putLocalObject(this.#knex, { id: session.id, kind: "checkout_session", userId: input.userId, data: session }, input.at);
    return this.#toCheckout(session, input.at);
  }

  async retrieveCheckout(id: string): Promise<ProviderCheckout | undefined> {
    const found = await getLocalObject<CheckoutSession>(this.#knex, "checkout_session", id);
    return found && this.#toCheckout(found.data, new Date());
  }

  async checkout(id: string, at: Date): Promise<OfflineCheckout | undefined> {
    const found = await getLocalObject<CheckoutSession>(this.#knex, "checkout_session", id);
    if (!found) return undefined;
    const session = found.data;
    const status = statusAt(session, at);
    return {
      id: session.id,
      plan: session.plan,
      interval: session.interval,
      amount: session.amount_total,
      currency: session.currency,
      successUrl: session.success_url,
      cancelUrl: session.cancel_url,
      status,
      expiresAt: toDate(session.expires_at),
      subscribed: status === "open" && (await hasLiveLocalSubscription(this.#knex, found.userId)),
    };
  }

  async pay(id: string, at: Date): Promise<void> {
    const found = await getLocalObject<CheckoutSession>(this.#knex, "checkout_session", id);
    if (!found) throw new OfflineCheckoutError("expired");
    const session = found.data;
    const status = statusAt(session, at);
    if (status !== "open") throw new OfflineCheckoutError(status);
    const now = seconds(at);
    const subscription: Subscription = {
      id: localId("sub"),
      object: "subscription",
      customer: session.customer,
      status: "active",
      plan: session.plan,
      interval: session.interval,
      current_period_start: now,
      current_period_end: seconds(periodEnd(at, session.interval)),
      cancel_at_period_end: false,
      cancel_at: null,
      canceled_at: null,
      ended_at: null,
      schedule: null,
      created: now,
    };
    // The session is claimed first, so a second Pay on the same page cannot start a second
    // subscription; the account's customer records are locked before, so that Pay on another
    // checkout of the same account waits, then finds the subscription this one started (issue 31 M4).
    const refusal = await this.#knex.transaction(async (trx) => {
      await lockLocalCustomers(trx, found.userId);
      const current = await trx("local_payment_objects").where({ id, kind: "checkout_session" }).forUpdate().first("data");
      if ((current?.data as CheckoutSession | undefined)?.status !== "open") return "complete";
      if (await hasLiveLocalSubscription(trx, found.userId)) return "subscribed";
      await putLocalObject(trx, { id: subscription.id, kind: "subscription", userId: found.userId, data: subscription }, at);
      await putLocalObject(trx, { id, kind: "checkout_session", userId: found.userId, data: { ...session, status: "complete", subscription: subscription.id } }, at);
      return undefined;
    });
    if (refusal) throw new OfflineCheckoutError(refusal);
    const invoice = await this.#invoice(found.userId, subscription, PRICES[subscription.plan][subscription.interval], subscription.current_period_start, subscription.current_period_end, at);
    await this.#emit("checkout.session.completed", { ...session, status: "complete", subscription: subscription.id });
    await this.#emit("customer.subscription.created", subscription);
    await this.#emit("invoice.paid", invoice);
  }

  async retrieveSubscription(id: string): Promise<ProviderSubscription | undefined> {
    const found = await getLocalObject<Subscription>(this.#knex, "subscription", id);
    return found && toSubscription(found.data);
  }

  async upgrade(current: ProviderSubscription, plan: PaidPlan, at: Date): Promise<PlanChange> {
    const found = await this.#subscription(current.id);
    const subscription = found.data;
    const now = Math.min(Math.max(seconds(at), subscription.current_period_start), subscription.current_period_end);
    const prorationAmount = prorate(subscription, plan, now);
    const updated: Subscription = { ...subscription, plan, schedule: null };
    await putLocalObject(this.#knex, { ...found, data: updated }, at);
    await this.#emit("customer.subscription.updated", updated);
    if (prorationAmount > 0) {
      const invoice = await this.#invoice(found.userId, updated, prorationAmount, now, subscription.current_period_end, at);
      await this.#emit("invoice.paid", invoice);
    }
    return { subscription: toSubscription(updated), prorationAmount, currency: CURRENCY };
  }

  async scheduleDowngrade(current: ProviderSubscription, plan: PaidPlan): Promise<ProviderSubscription> {
    return this.#update(current.id, (subscription) => ({ ...subscription, schedule: { plan, at: subscription.current_period_end } }));
  }

  async dropScheduledChange(current: ProviderSubscription): Promise<ProviderSubscription> {
    return this.#update(current.id, (subscription) => ({ ...subscription, schedule: null }));
  }

  async cancelAtPeriodEnd(subscriptionId: string, at: Date): Promise<ProviderSubscription> {
    return this.#update(
      subscriptionId,
      (subscription) => ({
        ...subscription,
        schedule: null,
        cancel_at_period_end: true,
        cancel_at: subscription.current_period_end,
        canceled_at: subscription.canceled_at ?? seconds(at),
      }),
      at,
    );
  }

  async cancelNow(subscriptionId: string, at: Date): Promise<void> {
    const found = await getLocalObject<Subscription>(this.#knex, "subscription", subscriptionId);
    if (!found || found.data.status === "canceled") return;
    const ended: Subscription = { ...found.data, status: "canceled", schedule: null, ended_at: seconds(at), canceled_at: found.data.canceled_at ?? seconds(at) };
    await putLocalObject(this.#knex, { ...found, data: ended }, at);
    await this.#emit("customer.subscription.deleted", ended);
  }

  async refundAndCancel(subscriptionId: string, at: Date): Promise<ProviderRefund[]> {
    // No money moved offline, so none goes back; and the local checkout page never sells a second
    // subscription in the first place.
    await this.cancelNow(subscriptionId, at);
    return [];
  }

  async portal(_customerId: string, at: Date): Promise<PortalLink> {
    // No payment methods to manage offline: the "portal" is the service's own billing page.
    return { url: this.#portalUrl, expiresAt: new Date(at.getTime() + PORTAL_TTL_MS) };
  }

  async retrieveInvoice(id: string): Promise<ProviderInvoice | undefined> {
    const found = await getLocalObject<Invoice>(this.#knex, "invoice", id);
    return found && toInvoice(found.data);
  }

  async listInvoices(customerId: string, limit: number): Promise<ProviderInvoice[]> {
    return (await localObjectsOf<Invoice>(this.#knex, "invoice", customerId, limit)).map(toInvoice);
  }

  verifyEvent(): ProviderEvent {
    throw new PaymentSignatureError("The offline payments provider sends no webhooks: configure STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET");
  }

  async advance(at: Date): Promise<void> {
    const now = seconds(at);
    for (const found of await dueLocalSubscriptions<Subscription>(this.#knex, now)) {
      let subscription = found.data;
      if (subscription.cancel_at_period_end) {
        const ended: Subscription = { ...subscription, status: "canceled", ended_at: subscription.current_period_end };
        await putLocalObject(this.#knex, { ...found, data: ended }, at);
        await this.#emit("customer.subscription.deleted", ended);
        continue;
      }
      const invoices: Invoice[] = [];
      while (subscription.current_period_end <= now) {
        const start = subscription.current_period_end;
        const plan = subscription.schedule && subscription.schedule.at <= start ? subscription.schedule.plan : subscription.plan;
        const schedule = subscription.schedule && subscription.schedule.at <= start ? null : subscription.schedule;
        subscription = { ...subscription, plan, schedule, current_period_start: start, current_period_end: seconds(periodEnd(toDate(start), subscription.interval)) };
        invoices.push(await this.#invoice(found.userId, subscription, PRICES[plan][subscription.interval], subscription.current_period_start, subscription.current_period_end, at));
      }
      await putLocalObject(this.#knex, { ...found, data: subscription }, at);
      await this.#emit("customer.subscription.updated", subscription);
      for (const invoice of invoices) await this.#emit("invoice.paid", invoice);
    }
  }

  async #subscription(id: string) {
    const found = await getLocalObject<Subscription>(this.#knex, "subscription", id);
    if (!found || found.data.status !== "active") throw new Error(`The offline provider has no active subscription ${id}`);
    return found;
  }

  async #update(id: string, change: (subscription: Subscription) => Subscription, at = new Date()): Promise<ProviderSubscription> {
    const found = await this.#subscription(id);
    const updated = change(found.data);
    await putLocalObject(this.#knex, { ...found, data: updated }, at);
    await this.#emit("customer.subscription.updated", updated);
    return toSubscription(updated);
  }

  async #invoice(userId: string, subscription: Subscription, amount: number, start: number, end: number, at: Date): Promise<Invoice> {
    const number = await nextLocalInvoiceNumber(this.#knex);
    const invoice: Invoice = {
      id: localId("in"),
      object: "invoice",
      customer: subscription.customer,
      subscription: subscription.id,
      number: `LOCAL-${String(number).padStart(6, "0")}`,
      total: amount,
      currency: CURRENCY,
      status: "paid",
      plan: subscription.plan,
      interval: subscription.interval,
      period_start: start,
      period_end: end,
      paid_at: seconds(at),
      created: seconds(at),
    };
    await putLocalObject(this.#knex, { id: invoice.id, kind: "invoice", userId, data: invoice }, at);
    return invoice;
  }

  async #emit(type: string, object: Customer | CheckoutSession | Subscription | Invoice): Promise<void> {
    await this.#listener?.({ id: `evt_local_${uuidv7()}`, type, data: { object: { ...object } } });
  }

  #toCheckout(session: CheckoutSession, at: Date): ProviderCheckout {
    return {
      id: session.id,
      url: this.#checkoutUrl(session.id),
      expiresAt: toDate(session.expires_at),
      customerId: session.customer,
      subscriptionId: session.subscription,
      status: statusAt(session, at),
      userId: session.client_reference_id,
    };
  }
}

function statusAt(session: CheckoutSession, at: Date): CheckoutSession["status"] {
  return session.status === "open" && session.expires_at <= seconds(at) ? "expired" : session.status;
}

/** What the rest of the period costs on the new plan, less what it was paid on the old one (Stripe's proration, to the second). */
function prorate(subscription: Subscription, plan: PaidPlan, now: number): number {
  const total = subscription.current_period_end - subscription.current_period_start;
  const left = subscription.current_period_end - now;
  if (total <= 0) return 0;
  const share = (amount: number) => Math.round((amount * left) / total);
  return share(PRICES[plan][subscription.interval]) - share(PRICES[subscription.plan][subscription.interval]);
}

function toSubscription(subscription: Subscription): ProviderSubscription {
  return {
    id: subscription.id,
    customerId: subscription.customer,
    status: subscription.status,
    plan: subscription.plan,
    interval: subscription.interval,
    currentPeriodStart: toDate(subscription.current_period_start),
    currentPeriodEnd: toDate(subscription.current_period_end),
    cancelAt: toDateOrNull(subscription.cancel_at),
    canceledAt: toDateOrNull(subscription.canceled_at),
    endedAt: toDateOrNull(subscription.ended_at),
    scheduled: subscription.schedule ? { plan: subscription.schedule.plan, at: toDate(subscription.schedule.at) } : null,
    createdAt: toDate(subscription.created),
  };
}

function toInvoice(invoice: Invoice): ProviderInvoice {
  return {
    id: invoice.id,
    customerId: invoice.customer,
    subscriptionId: invoice.subscription,
    number: invoice.number,
    amount: invoice.total,
    currency: invoice.currency,
    status: invoice.status,
    plan: invoice.plan,
    interval: invoice.interval,
    periodStart: toDate(invoice.period_start),
    periodEnd: toDate(invoice.period_end),
    paidAt: toDate(invoice.paid_at),
    pdfUrl: null,
    createdAt: toDate(invoice.created),
  };
}
