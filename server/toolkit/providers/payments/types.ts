/** The plans that are paid for, and how often they are charged (spec/billing.tsp). */
export type PaidPlan = "plus" | "pro" | "creator";
export type BillingInterval = "month" | "year";

/**
 * An event as the payment provider sends it (Stripe's shape: `{id, type, data: {object}}`). The
 * processor reads only the id, the type and the object's id; the object's current state is always
 * read again from the provider, so events may come in any order, and more than once.
 */
export interface ProviderEvent {
  id: string;
  type: string;
  data: { object: { id?: unknown; [field: string]: unknown } };
}

export interface ProviderCheckout {
  id: string;
  /** Where the buyer's browser goes to pay. */
  url: string;
  expiresAt: Date;
  customerId: string;
  /** Set once the buyer has paid. */
  subscriptionId: string | null;
  status: "open" | "complete" | "expired";
  /** The account the checkout was started for (`client_reference_id`). */
  userId: string | null;
}

/** A subscription as the provider holds it now. */
export interface ProviderSubscription {
  id: string;
  customerId: string;
  /** The provider's status: `active`, `trialing`, `past_due`, `unpaid`, `canceled`, `incomplete`, ... */
  status: string;
  /** The plan and interval of the price billed now. */
  plan: PaidPlan;
  interval: BillingInterval;
  currentPeriodStart: Date;
  currentPeriodEnd: Date;
  /** When a requested cancellation takes effect, and when it was requested. */
  cancelAt: Date | null;
  canceledAt: Date | null;
  endedAt: Date | null;
  /** A plan change the provider will make at `at` (a downgrade waiting for the period end). */
  scheduled: { plan: PaidPlan; at: Date } | null;
  createdAt: Date;
}

export interface ProviderInvoice {
  id: string;
  customerId: string;
  subscriptionId: string | null;
  number: string | null;
  /** Minor units of `currency` (lowercase ISO 4217). */
  amount: number;
  currency: string;
  status: "draft" | "open" | "paid" | "void" | "uncollectible";
  /** The plan and interval it bills; null when none of its lines is one of the plans' prices. */
  plan: PaidPlan | null;
  interval: BillingInterval | null;
  periodStart: Date;
  periodEnd: Date;
  paidAt: Date | null;
  pdfUrl: string | null;
  createdAt: Date;
}

/** An upgrade as applied: the subscription after it and what the provider charged (positive) or credited. */
export interface PlanChange {
  subscription: ProviderSubscription;
  prorationAmount: number;
  currency: string;
}

/** A refund of one payment of an invoice, or why the provider refused to make it. */
export interface ProviderRefund {
  /** The provider's refund id; null when it refused (`failure` says why). */
  id: string | null;
  invoiceId: string;
  /** Minor units of `currency`: what was refunded, or what could not be. */
  amount: number;
  currency: string;
  failure: string | null;
}

/** A link to the provider's customer portal. */
export interface PortalLink {
  url: string;
  expiresAt: Date;
}

/**
 * The payment provider: Stripe, or the offline provider that needs no account (a local checkout
 * page, no money). Both keep the same subscription state machine and send the same events; the
 * offline one hands its events to the listener given to `onEvent` (there is no webhook), Stripe
 * sends them to `POST /v1/billing/webhook`. Failures of the provider throw `UpstreamError`.
 */
export interface PaymentsProvider {
  readonly kind: "stripe" | "local";
  createCustomer(input: { userId: string; email: string }): Promise<string>;
  createCheckout(input: CheckoutInput): Promise<ProviderCheckout>;
  retrieveCheckout(id: string): Promise<ProviderCheckout | undefined>;
  retrieveSubscription(id: string): Promise<ProviderSubscription | undefined>;
  /** Moves to a higher plan now, prorated; the proration is previewed and applied for the same instant. */
  upgrade(subscription: ProviderSubscription, plan: PaidPlan, at: Date): Promise<PlanChange>;
  /** Moves to a lower plan at the end of the current period (a subscription schedule); nothing is prorated. */
  scheduleDowngrade(subscription: ProviderSubscription, plan: PaidPlan): Promise<ProviderSubscription>;
  /** Drops a scheduled downgrade: the subscription stays on its plan. */
  dropScheduledChange(subscription: ProviderSubscription): Promise<ProviderSubscription>;
  cancelAtPeriodEnd(subscriptionId: string, at: Date): Promise<ProviderSubscription>;
  /** Ends the subscription at once, without a refund (the account is being purged). */
  cancelNow(subscriptionId: string, at: Date): Promise<void>;
  /**
   * Refunds every payment of the subscription's paid invoices, then ends it at once: the account
   * already had a live subscription when this one was bought (issue 31 M4). Safe to call again, as
   * an event's retry does: a payment is never refunded twice. A refund the provider refuses for good
   * (a disputed payment) is answered with its reason and does not stop the cancellation; a failure
   * of the provider throws `UpstreamError` before the subscription is ended.
   */
  refundAndCancel(subscriptionId: string, at: Date): Promise<ProviderRefund[]>;
  portal(customerId: string, at: Date): Promise<PortalLink>;
  retrieveInvoice(id: string): Promise<ProviderInvoice | undefined>;
  /** The customer's invoices, newest first (at most `limit`). */
  listInvoices(customerId: string, limit: number): Promise<ProviderInvoice[]>;
  /**
   * The event a webhook request carries, once its signature is checked against the raw body
   * (`receivedAt` judges the signature's age). Throws `PaymentSignatureError` otherwise.
   */
  verifyEvent(payload: Buffer, signature: string, receivedAt: Date): ProviderEvent;
  /** Who processes the events the provider emits itself (the offline provider; Stripe emits none here). */
  onEvent(listener: (event: ProviderEvent) => Promise<void>): void;
  /** The offline provider's own checkout page and clock; absent on Stripe. */
  readonly local?: OfflinePayments;
}

export interface CheckoutInput {
  userId: string;
  customerId: string;
  plan: PaidPlan;
  interval: BillingInterval;
  successUrl: string;
  cancelUrl: string;
  at: Date;
}

/** A checkout of the offline provider, as its page shows it. */
export interface OfflineCheckout {
  id: string;
  plan: PaidPlan;
  interval: BillingInterval;
  /** Minor units of `currency`. */
  amount: number;
  currency: string;
  successUrl: string;
  cancelUrl: string;
  status: "open" | "complete" | "expired";
  expiresAt: Date;
  /** The buyer's account has a live subscription already: the page sells nothing (issue 31 M4). */
  subscribed: boolean;
}

/** What only the offline provider does: what Stripe's hosted checkout and Stripe's own clock do. */
export interface OfflinePayments {
  checkout(id: string, at: Date): Promise<OfflineCheckout | undefined>;
  /**
   * The buyer paid (no money moves): the subscription starts and its events are sent. Throws
   * `OfflineCheckoutError` when the checkout is not open or the account already has a live
   * subscription.
   */
  pay(id: string, at: Date): Promise<void>;
  /** Renews subscriptions whose period ended by `at`, applies scheduled downgrades and ends cancelled ones, sending the events. */
  advance(at: Date): Promise<void>;
}

/** The provider declined the payment an upgrade needs: the plan stays as it was. */
export class PaymentDeclinedError extends Error {
  override name = "PaymentDeclinedError";
}

/** A webhook whose signature does not verify (or no secret is configured): 400, nothing changes. */
export class PaymentSignatureError extends Error {
  override name = "PaymentSignatureError";
}
