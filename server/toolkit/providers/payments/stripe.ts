import Stripe from "stripe";
import { UpstreamError } from "../errors.ts";
import { catalog, fromLookupKey, lookupKey, planName, PRICES, CURRENCY } from "./catalog.ts";
import {
  PaymentDeclinedError,
  PaymentSignatureError,
  type BillingInterval,
  type CheckoutInput,
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

export interface StripeOptions {
  secretKey: string;
  /** The webhook endpoint's signing secret; without it every event is refused. */
  webhookSecret: string | undefined;
  /** Another API address (a Stripe mock, the tests' fake): its protocol, host and port are used. */
  apiUrl?: string | undefined;
  /** Where the customer portal sends the customer back. */
  portalReturnUrl: string;
  /** Retries of a failed call (the package adds an Idempotency-Key to retried POSTs). */
  maxNetworkRetries?: number;
  timeoutMs?: number;
}

/** How long a price lookup is trusted: prices change rarely, and `sync-prices` is run by hand. */
const PRICE_CACHE_MS = 10 * 60_000;
/** Stripe does not say how long a portal session lasts; it is meant to be opened at once. */
const PORTAL_TTL_MS = 5 * 60_000;
/** How old a webhook signature may be (Stripe's own default). */
const SIGNATURE_TOLERANCE_S = 300;

const toDate = (seconds: number) => new Date(seconds * 1000);
const toDateOrNull = (seconds: number | null | undefined) => (seconds == null ? null : toDate(seconds));
const idOf = (value: string | { id: string } | null | undefined) => (value == null ? null : typeof value === "string" ? value : value.id);

/** Stripe through the `stripe` package: Checkout, subscriptions with schedules, the customer portal, invoices. */
export class StripePayments implements PaymentsProvider {
  readonly kind = "stripe";
  readonly #stripe: Stripe;
  readonly #webhookSecret: string | undefined;
  readonly #portalReturnUrl: string;
  #prices: { at: number; byKey: Map<string, string> } | undefined;

  constructor(options: StripeOptions) {
    const api = options.apiUrl ? new URL(options.apiUrl) : undefined;
    this.#stripe = new Stripe(options.secretKey, {
      maxNetworkRetries: options.maxNetworkRetries ?? 2,
      timeout: options.timeoutMs ?? 30_000,
      telemetry: false,
      ...(api
        ? {
            host: api.hostname,
            port: api.port || (api.protocol === "https:" ? 443 : 80),
            protocol: api.protocol === "https:" ? ("https" as const) : ("http" as const),
          }
        : {}),
    });
    this.#webhookSecret = options.webhookSecret;
    this.#portalReturnUrl = options.portalReturnUrl;
  }

  /** The package itself, for `persona billing sync-prices`. */
  get client(): Stripe {
    return this.#stripe;
  }

  onEvent(): void {
    // Stripe's events come through the webhook endpoint.
  }

  async createCustomer(input: { userId: string; email: string }): Promise<string> {
    const customer = await this.#call("create a customer", () =>
      this.#stripe.customers.create({ email: input.email, metadata: { persona_user_id: input.userId } }, { idempotencyKey: `persona-customer-${input.userId}` }),
    );
    return customer.id;
  }

  async createCheckout(input: CheckoutInput): Promise<ProviderCheckout> {
    const price = await this.#priceId(input.plan, input.interval);
    const session = await this.#call("create a checkout session", () =>
      this.#stripe.checkout.sessions.create({
        mode: "subscription",
        customer: input.customerId,
        client_reference_id: input.userId,
        line_items: [{ price, quantity: 1 }],
        success_url: input.successUrl,
        cancel_url: input.cancelUrl,
        metadata: { persona_user_id: input.userId },
        subscription_data: { metadata: { persona_user_id: input.userId } },
      }),
    );
    return toCheckout(session);
  }

  async retrieveCheckout(id: string): Promise<ProviderCheckout | undefined> {
    const session = await this.#find("read a checkout session", () => this.#stripe.checkout.sessions.retrieve(id));
    return session && toCheckout(session);
  }

  async retrieveSubscription(id: string): Promise<ProviderSubscription | undefined> {
    const subscription = await this.#find("read a subscription", () => this.#stripe.subscriptions.retrieve(id, { expand: ["schedule"] }));
    return subscription && toSubscription(subscription);
  }

  async upgrade(subscription: ProviderSubscription, plan: PaidPlan, at: Date): Promise<PlanChange> {
    const raw = await this.#raw(subscription.id);
    await this.#releaseSchedule(raw);
    const item = raw.items.data[0]!;
    const price = await this.#priceId(plan, subscription.interval);
    // The preview and the change name the same instant, so the amount answered is the amount charged.
    const prorationDate = Math.floor(at.getTime() / 1000);
    const items = [{ id: item.id, price }];
    const preview = await this.#call("preview the proration", () =>
      this.#stripe.invoices.createPreview({
        customer: subscription.customerId,
        subscription: subscription.id,
        subscription_details: { items, proration_behavior: "always_invoice", proration_date: prorationDate },
      }),
    );
    const prorationAmount = preview.lines.data
      .filter((line) => line.parent?.subscription_item_details?.proration ?? line.parent?.invoice_item_details?.proration)
      .reduce((sum, line) => sum + line.amount, 0);
    const updated = await this.#call("change the plan", () =>
      this.#stripe.subscriptions.update(subscription.id, {
        items,
        proration_behavior: "always_invoice",
        proration_date: prorationDate,
        // The upgrade applies only once paid: a declined card leaves the subscription as it was.
        payment_behavior: "error_if_incomplete",
        metadata: { persona_plan: plan },
        expand: ["schedule"],
      }),
    );
    return { subscription: toSubscription(updated), prorationAmount, currency: preview.currency };
  }

  async scheduleDowngrade(subscription: ProviderSubscription, plan: PaidPlan): Promise<ProviderSubscription> {
    const raw = await this.#raw(subscription.id);
    await this.#releaseSchedule(raw);
    const [current, next] = await Promise.all([this.#priceId(subscription.plan, subscription.interval), this.#priceId(plan, subscription.interval)]);
    const schedule = await this.#call("schedule the downgrade", () => this.#stripe.subscriptionSchedules.create({ from_subscription: subscription.id }));
    const periodEnd = Math.floor(subscription.currentPeriodEnd.getTime() / 1000);
    await this.#call("schedule the downgrade", () =>
      this.#stripe.subscriptionSchedules.update(schedule.id, {
        end_behavior: "release",
        proration_behavior: "none",
        metadata: { persona_plan: plan, persona_change_at: String(periodEnd) },
        phases: [
          { items: [{ price: current, quantity: 1 }], start_date: schedule.phases[0]?.start_date ?? Math.floor(subscription.currentPeriodStart.getTime() / 1000), end_date: periodEnd },
          { items: [{ price: next, quantity: 1 }], start_date: periodEnd, duration: { interval: subscription.interval, interval_count: 1 }, metadata: { persona_plan: plan } },
        ],
      }),
    );
    return (await this.retrieveSubscription(subscription.id)) ?? subscription;
  }

  async dropScheduledChange(subscription: ProviderSubscription): Promise<ProviderSubscription> {
    await this.#releaseSchedule(await this.#raw(subscription.id));
    return (await this.retrieveSubscription(subscription.id)) ?? subscription;
  }

  async cancelAtPeriodEnd(subscriptionId: string): Promise<ProviderSubscription> {
    // A subscription run by a schedule takes no cancellation; a cancellation supersedes the downgrade.
    await this.#releaseSchedule(await this.#raw(subscriptionId));
    const updated = await this.#call("cancel the subscription", () =>
      this.#stripe.subscriptions.update(subscriptionId, { cancel_at_period_end: true, expand: ["schedule"] }),
    );
    return toSubscription(updated);
  }

  async cancelNow(subscriptionId: string): Promise<void> {
    const found = await this.#find("cancel the subscription", () => this.#stripe.subscriptions.retrieve(subscriptionId));
    if (!found || found.status === "canceled" || found.status === "incomplete_expired") return;
    await this.#call("cancel the subscription", () => this.#stripe.subscriptions.cancel(subscriptionId, { prorate: false }));
  }

  async refundAndCancel(subscriptionId: string): Promise<ProviderRefund[]> {
    // Refunds first: a cancelled subscription is no longer a duplicate to the event processor, so an
    // event retried after a failed refund would never refund; a refunded one still is, and is
    // cancelled on the retry.
    const invoices = await this.#call("list the subscription's invoices", () => this.#stripe.invoices.list({ subscription: subscriptionId, status: "paid", limit: 100 }));
    const refunds: ProviderRefund[] = [];
    for (const invoice of invoices.data) {
      if (!invoice.id || invoice.amount_paid <= 0) continue;
      const payments = await this.#call("list the invoice's payments", () => this.#stripe.invoicePayments.list({ invoice: invoice.id!, status: "paid", limit: 100 }));
      for (const payment of payments.data) {
        const intent = idOf(payment.payment.payment_intent);
        if (intent) refunds.push(await this.#refund(subscriptionId, invoice.id, intent, payment.amount_paid ?? 0, payment.currency));
      }
    }
    await this.#cancelAtOnce(subscriptionId);
    return refunds;
  }

  /** Refunds a payment in full, once: the idempotency key makes a retry answer the same refund, and a payment refunded earlier answers that refund. */
  async #refund(subscriptionId: string, invoiceId: string, intent: string, amount: number, currency: string): Promise<ProviderRefund> {
    try {
      const refund = await this.#stripe.refunds.create(
        { payment_intent: intent, reason: "duplicate", metadata: { persona_reason: "duplicate_subscription", persona_subscription: subscriptionId } },
        { idempotencyKey: `persona-duplicate-refund-${intent}` },
      );
      return { id: refund.id, invoiceId, amount: refund.amount, currency: refund.currency, failure: null };
    } catch (error) {
      if (!(error instanceof Stripe.errors.StripeInvalidRequestError)) throw upstream("refund a payment", error);
      if (error.code === "charge_already_refunded") {
        const earlier = await this.#call("list a payment's refunds", () => this.#stripe.refunds.list({ payment_intent: intent, limit: 10 }));
        const made = earlier.data.find((refund) => refund.status === "succeeded" || refund.status === "pending");
        if (made) return { id: made.id, invoiceId, amount: made.amount, currency: made.currency, failure: null };
      }
      // Refused for good (a disputed payment, one too old to refund): the operator takes it from here.
      return { id: null, invoiceId, amount, currency, failure: error.message };
    }
  }

  /** Ends the subscription now without proration; one that has ended already is left as it is. */
  async #cancelAtOnce(subscriptionId: string): Promise<void> {
    const ended = (status: string | undefined) => status === "canceled" || status === "incomplete_expired";
    const found = await this.#find("cancel the subscription", () => this.#stripe.subscriptions.retrieve(subscriptionId));
    if (!found || ended(found.status)) return;
    try {
      await this.#stripe.subscriptions.cancel(subscriptionId, { prorate: false });
    } catch (error) {
      // Another delivery of the same news may have cancelled it a moment ago.
      const now = await this.#find("cancel the subscription", () => this.#stripe.subscriptions.retrieve(subscriptionId));
      if (!now || !ended(now.status)) throw upstream("cancel the subscription", error);
    }
  }

  async portal(customerId: string): Promise<PortalLink> {
    const session = await this.#call("open the customer portal", () =>
      this.#stripe.billingPortal.sessions.create({ customer: customerId, return_url: this.#portalReturnUrl }),
    );
    return { url: session.url, expiresAt: new Date(session.created * 1000 + PORTAL_TTL_MS) };
  }

  async retrieveInvoice(id: string): Promise<ProviderInvoice | undefined> {
    const invoice = await this.#find("read an invoice", () => this.#stripe.invoices.retrieve(id));
    return invoice && toInvoice(invoice, await this.#pricePlans());
  }

  async listInvoices(customerId: string, limit: number): Promise<ProviderInvoice[]> {
    const list = await this.#call("list invoices", () => this.#stripe.invoices.list({ customer: customerId, limit }));
    const plans = await this.#pricePlans();
    return list.data.map((invoice) => toInvoice(invoice, plans));
  }

  verifyEvent(payload: Buffer, signature: string, receivedAt: Date): ProviderEvent {
    if (!this.#webhookSecret) throw new PaymentSignatureError("No webhook secret is configured (STRIPE_WEBHOOK_SECRET): events cannot be verified");
    try {
      const event = this.#stripe.webhooks.constructEvent(payload, signature, this.#webhookSecret, SIGNATURE_TOLERANCE_S, undefined, receivedAt.getTime());
      return event as unknown as ProviderEvent;
    } catch (error) {
      if (error instanceof Stripe.errors.StripeSignatureVerificationError) {
        throw new PaymentSignatureError("The Stripe-Signature header does not match the body, or is too old");
      }
      throw error;
    }
  }

  /**
   * Creates the Product of each plan and the Price of each plan and interval that is missing, found
   * by lookup key; run again, it creates nothing. Answers every lookup key with its price id and
   * whether it was made now.
   */
  async syncPrices(): Promise<{ lookup_key: string; price_id: string; created: boolean }[]> {
    const existing = await this.#listPrices();
    const results: { lookup_key: string; price_id: string; created: boolean }[] = [];
    for (const entry of catalog()) {
      const found = existing.get(entry.key);
      if (found) {
        results.push({ lookup_key: entry.key, price_id: found, created: false });
        continue;
      }
      const product = await this.#ensureProduct(entry.plan);
      const price = await this.#call("create a price", () =>
        this.#stripe.prices.create(
          { product, currency: CURRENCY, unit_amount: entry.amount, recurring: { interval: entry.interval }, lookup_key: entry.key, nickname: `${planName(entry.plan)} (${entry.interval}ly)` },
          { idempotencyKey: `persona-price-${entry.key}-${entry.amount}` },
        ),
      );
      results.push({ lookup_key: entry.key, price_id: price.id, created: true });
    }
    this.#prices = undefined;
    return results;
  }

  async #ensureProduct(plan: PaidPlan): Promise<string> {
    const id = `persona_${plan}`;
    const found = await this.#find("read a product", () => this.#stripe.products.retrieve(id));
    if (found) return found.id;
    const made = await this.#call("create a product", () => this.#stripe.products.create({ id, name: `Persona ${planName(plan)}` }));
    return made.id;
  }

  async #listPrices(): Promise<Map<string, string>> {
    const keys = catalog().map((entry) => entry.key);
    const list = await this.#call("look up prices", () => this.#stripe.prices.list({ lookup_keys: keys, active: true, limit: 100 }));
    return new Map(list.data.filter((price) => price.lookup_key).map((price) => [price.lookup_key!, price.id]));
  }

  async #pricesByKey(): Promise<Map<string, string>> {
    if (!this.#prices || Date.now() - this.#prices.at > PRICE_CACHE_MS) this.#prices = { at: Date.now(), byKey: await this.#listPrices() };
    return this.#prices.byKey;
  }

  /** price id -> plan and interval, for reading invoice lines (which name prices by id). */
  async #pricePlans(): Promise<Map<string, { plan: PaidPlan; interval: BillingInterval }>> {
    const byKey = await this.#pricesByKey();
    return new Map([...byKey].map(([key, id]) => [id, fromLookupKey(key)!]));
  }

  async #priceId(plan: PaidPlan, interval: BillingInterval): Promise<string> {
    const key = lookupKey(plan, interval);
    const id = (await this.#pricesByKey()).get(key);
    if (!id) throw new UpstreamError(`Stripe has no active Price with lookup key ${key} (${PRICES[plan][interval]} ${CURRENCY}): run \`persona billing sync-prices\``);
    return id;
  }

  async #raw(subscriptionId: string): Promise<Stripe.Subscription> {
    const raw = await this.#find("read a subscription", () => this.#stripe.subscriptions.retrieve(subscriptionId));
    if (!raw) throw new UpstreamError(`Stripe has no subscription ${subscriptionId}`, 404);
    return raw;
  }

  async #releaseSchedule(subscription: Stripe.Subscription): Promise<void> {
    const schedule = idOf(subscription.schedule);
    if (schedule) await this.#call("release the subscription schedule", () => this.#stripe.subscriptionSchedules.release(schedule));
  }

  /** A read that answers undefined for an object Stripe does not have (404). */
  async #find<T>(what: string, call: () => Promise<T>): Promise<T | undefined> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof Stripe.errors.StripeError && error.statusCode === 404) return undefined;
      throw upstream(what, error);
    }
  }

  async #call<T>(what: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw upstream(what, error);
    }
  }
}

/** A declined card is the buyer's problem, not the provider's: the service answers it. */
function upstream(what: string, error: unknown): Error {
  if (error instanceof UpstreamError) return error;
  if (error instanceof Stripe.errors.StripeCardError) return new PaymentDeclinedError(error.message);
  const status = error instanceof Stripe.errors.StripeError ? error.statusCode : undefined;
  const reason = error instanceof Error ? error.message : String(error);
  return new UpstreamError(`Stripe failed to ${what}: ${reason}`, status, { cause: error });
}

function toCheckout(session: Stripe.Checkout.Session): ProviderCheckout {
  return {
    id: session.id,
    url: session.url ?? "",
    expiresAt: toDate(session.expires_at),
    customerId: idOf(session.customer) ?? "",
    subscriptionId: idOf(session.subscription),
    status: session.status === "complete" ? "complete" : session.status === "expired" ? "expired" : "open",
    userId: session.client_reference_id ?? session.metadata?.persona_user_id ?? null,
  };
}

function toSubscription(subscription: Stripe.Subscription): ProviderSubscription {
  const item = subscription.items.data[0];
  const price = item ? fromLookupKey(item.price.lookup_key) : undefined;
  if (!item || !price) throw new UpstreamError(`Stripe subscription ${subscription.id} is not on one of the plans' prices (lookup keys persona_<plan>_<interval>)`);
  const schedule = typeof subscription.schedule === "object" ? subscription.schedule : null;
  const scheduledPlan = schedule && ["active", "not_started"].includes(schedule.status) ? fromLookupKey(`persona_${schedule.metadata?.persona_plan}_${price.interval}`) : undefined;
  const scheduledAt = Number(schedule?.metadata?.persona_change_at);
  return {
    id: subscription.id,
    customerId: idOf(subscription.customer) ?? "",
    status: subscription.status,
    plan: price.plan,
    interval: price.interval,
    currentPeriodStart: toDate(item.current_period_start),
    currentPeriodEnd: toDate(item.current_period_end),
    cancelAt: toDateOrNull(subscription.cancel_at),
    canceledAt: toDateOrNull(subscription.canceled_at),
    endedAt: toDateOrNull(subscription.ended_at),
    scheduled: scheduledPlan && Number.isFinite(scheduledAt) ? { plan: scheduledPlan.plan, at: toDate(scheduledAt) } : null,
    createdAt: toDate(subscription.created),
  };
}

function toInvoice(invoice: Stripe.Invoice, plans: Map<string, { plan: PaidPlan; interval: BillingInterval }>): ProviderInvoice {
  // The line that says what the invoice is for: the largest charge for one of the plans' prices.
  const lines = invoice.lines.data
    .map((line) => ({ line, price: plans.get(idOf(line.pricing?.price_details?.price) ?? "") }))
    .filter((entry) => entry.price)
    .sort((a, b) => b.line.amount - a.line.amount);
  const main = lines[0];
  const subscription = invoice.parent?.subscription_details?.subscription;
  return {
    id: invoice.id ?? "",
    customerId: idOf(invoice.customer) ?? "",
    subscriptionId: idOf(subscription),
    number: invoice.number,
    amount: invoice.total,
    currency: invoice.currency,
    status: (invoice.status ?? "draft") as ProviderInvoice["status"],
    plan: main?.price?.plan ?? null,
    interval: main?.price?.interval ?? null,
    periodStart: toDate(main?.line.period.start ?? invoice.period_start),
    periodEnd: toDate(main?.line.period.end ?? invoice.period_end),
    paidAt: toDateOrNull(invoice.status_transitions?.paid_at),
    pdfUrl: invoice.invoice_pdf ?? null,
    createdAt: toDate(invoice.created),
  };
}
