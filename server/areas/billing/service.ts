import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { components } from "../../../generated/openapi.d.ts";
import { conflict, notFound, notFoundExplained, providerFailure, serviceUnavailable, upstreamFailed } from "../../toolkit/http/error-catalogue.ts";
import type { PageWindow } from "../../toolkit/http/paging.ts";
import { countPlanDocuments } from "../knowledge/index.ts";
import { countPlanPersonas } from "../personas/index.ts";
import { PLAN_RANK } from "../../toolkit/providers/payments/catalog.ts";
import { PaymentDeclinedError, type PaidPlan, type PaymentsProvider, type ProviderSubscription } from "../../toolkit/providers/payments/types.ts";
import { UpstreamError } from "../../toolkit/providers/errors.ts";
import type { Services } from "../../toolkit/services.ts";
import { paymentsOf } from "./events.ts";
import { limitsOf } from "../../quota/plans.ts";
import { checkReturnUrls } from "./return-urls.ts";
import { claimPlanChange, customerOf, keepCustomer, listInvoices, releasePlanChange, subscriptionOf, userEmail, type SubscriptionRow } from "./store.ts";
import { applySubscription } from "./sync.ts";
import { messagesSentIn, planOf, usagePeriod } from "../../quota/usage.ts";
import { replyCostsOf } from "../conversations/index.ts";

type CheckoutInput = components["schemas"]["CheckoutInput"];

async function withProvider<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw providerFailure(error);
  }
}

/** The account's customer at the provider, made on its first checkout. */
async function ensureCustomer(services: Services, provider: PaymentsProvider, userId: string): Promise<string> {
  const { knex } = services.db;
  const known = await customerOf(knex, userId, provider.kind);
  if (known) return known.customer_id;
  const email = await userEmail(knex, userId);
  if (!email) throw notFound("User");
  const customerId = await provider.createCustomer({ userId, email });
  return (await keepCustomer(knex, { user_id: userId, provider: provider.kind, customer_id: customerId, created_at: services.now() })).customer_id;
}

/**
 * Starts buying a paid plan: a payment page at the provider (or the local checkout page). 409 when
 * the account already has a paid plan by subscription: plans are changed with PUT.
 */
export async function startCheckout(services: Services, userId: string, input: CheckoutInput) {
  checkReturnUrls(services.config, { success_url: input.success_url, cancel_url: input.cancel_url });
  const current = await subscriptionOf(services.db.knex, userId);
  if (current && current.plan !== "free") {
    throw conflict(`You already subscribe to the ${current.plan} plan: change plans with PUT /v1/billing/subscription`);
  }
  const provider = paymentsOf(services);
  return withProvider(async () => {
    const customerId = await ensureCustomer(services, provider, userId);
    return provider.createCheckout({
      userId,
      customerId,
      plan: input.plan,
      interval: input.interval,
      successUrl: input.success_url,
      cancelUrl: input.cancel_url,
      at: services.now(),
    });
  });
}

export async function requireSubscription(services: Services, userId: string): Promise<SubscriptionRow> {
  const row = await subscriptionOf(services.db.knex, userId);
  if (!row) throw notFoundExplained("You have no subscription: start one with POST /v1/billing/checkout");
  return row;
}

/** Reads the subscription from the provider and records it; the state answered is the provider's present one. */
async function refresh(services: Services, provider: PaymentsProvider, row: SubscriptionRow): Promise<ProviderSubscription> {
  const readAt = new Date();
  const subscription = await provider.retrieveSubscription(row.provider_subscription_id);
  if (!subscription) throw new UpstreamError(`The payment provider no longer has subscription ${row.provider_subscription_id}`);
  await record(services, row.user_id, subscription, readAt);
  return subscription;
}

async function record(services: Services, userId: string, subscription: ProviderSubscription, readAt: Date): Promise<SubscriptionRow> {
  const row = await services.db.knex.transaction((trx) => applySubscription(trx, services, userId, subscription, readAt));
  if (!row) throw notFound("User");
  return row;
}

/** How long a change may hold the account's claim: past any run of provider calls (30 s timeouts, retries), so only a crashed process's claim lapses. */
const PLAN_CHANGE_CLAIM_MS = 3 * 60_000;
/** How long a request waits for another change of the same account before answering 503. */
const PLAN_CHANGE_WAIT_MS = 30_000;
const PLAN_CHANGE_POLL_MS = { first: 10, most: 200 };

/**
 * Runs `change` on the account's subscription row while holding the row's claim, so that changes of
 * one account run one after the other, each deciding on the state the previous one left (issue 31
 * L1: concurrent upgrades each charged the proration, and one made an immediate downgrade). The
 * claim is a column, not a lock held by a transaction: the change calls the payment provider in
 * between, and on the embedded database an open transaction holds the one session every other
 * request needs (the offline provider's own events included). A request that finds the claim taken
 * waits for it; `change` gets undefined when the account has no subscription row.
 */
async function oneChangeAtATime<T>(services: Services, userId: string, change: (row: SubscriptionRow | undefined) => Promise<T>): Promise<T> {
  const { knex } = services.db;
  const claim = randomUUID();
  const deadline = Date.now() + PLAN_CHANGE_WAIT_MS;
  for (let wait = PLAN_CHANGE_POLL_MS.first; ; wait = Math.min(wait * 2, PLAN_CHANGE_POLL_MS.most)) {
    const row = await claimPlanChange(knex, userId, claim, PLAN_CHANGE_CLAIM_MS);
    if (row) {
      try {
        return await change(row);
      } finally {
        await releasePlanChange(knex, userId, claim).catch((error: unknown) => services.log.warn({ err: error, userId }, "a plan change's claim could not be released; it lapses by itself"));
      }
    }
    if (!(await subscriptionOf(knex, userId))) return change(undefined);
    if (Date.now() >= deadline) {
      throw serviceUnavailable("Another change to your subscription is still being made: retry in a moment", 5);
    }
    await sleep(wait);
  }
}

export interface PlanChangeResult {
  row: SubscriptionRow;
  plan: PaidPlan;
  previousPlan: string;
  prorationAmount: number;
  currency: string;
  scheduledChangeAt: Date | null;
}

/**
 * Moves the subscription to another paid plan, keeping its interval. An upgrade applies at once,
 * prorated, and only once paid; a downgrade waits for the period end (a subscription schedule at
 * the provider). Asking for the current plan while a downgrade is pending drops the downgrade.
 */
export async function changePlan(services: Services, userId: string, plan: PaidPlan): Promise<PlanChangeResult> {
  return oneChangeAtATime(services, userId, (row) => changePlanOf(services, userId, row, plan));
}

async function changePlanOf(services: Services, userId: string, row: SubscriptionRow | undefined, plan: PaidPlan): Promise<PlanChangeResult> {
  if (!row) throw notFoundExplained("You have no subscription to change: start one with POST /v1/billing/checkout");
  if (row.plan === "free") throw conflict("Your subscription has ended: start a new one with POST /v1/billing/checkout");
  const provider = paymentsOf(services);
  const current = row.plan as PaidPlan;
  const unchanged = { plan, previousPlan: current, prorationAmount: 0, currency: "usd", scheduledChangeAt: null };

  if (plan === current) {
    if (!row.scheduled_plan) throw conflict(`You are already on the ${plan} plan`);
    const kept = await withProvider(async () => {
      const subscription = await refresh(services, provider, row);
      return record(services, userId, await provider.dropScheduledChange(subscription), new Date());
    });
    return { ...unchanged, row: kept };
  }

  if (PLAN_RANK[plan] > PLAN_RANK[current]) {
    const change = await withProvider(async () => {
      const subscription = await refresh(services, provider, row);
      try {
        return await provider.upgrade(subscription, plan, services.now());
      } catch (error) {
        if (error instanceof PaymentDeclinedError) throw conflict(`The payment for the upgrade was declined, so the plan is unchanged: ${error.message}`);
        throw error;
      }
    });
    const upgraded = await record(services, userId, change.subscription, new Date());
    return { row: upgraded, plan, previousPlan: current, prorationAmount: change.prorationAmount, currency: change.currency, scheduledChangeAt: null };
  }

  if (row.cancel_at) {
    throw conflict(`Your subscription ends on ${row.cancel_at.toISOString().slice(0, 10)}: a downgrade would never take effect`);
  }
  const scheduled = await withProvider(async () => {
    const subscription = await refresh(services, provider, row);
    return record(services, userId, await provider.scheduleDowngrade(subscription, plan), new Date());
  });
  return { ...unchanged, row: scheduled, scheduledChangeAt: scheduled.scheduled_change_at ?? scheduled.current_period_end };
}

/** Cancels at the period end; a second cancellation answers the pending one unchanged. Waits for a plan change under way. */
export async function cancelSubscription(services: Services, userId: string): Promise<SubscriptionRow & { cancel_at: Date; canceled_at: Date }> {
  return oneChangeAtATime(services, userId, (row) => cancelSubscriptionOf(services, userId, row));
}

async function cancelSubscriptionOf(services: Services, userId: string, row: SubscriptionRow | undefined): Promise<SubscriptionRow & { cancel_at: Date; canceled_at: Date }> {
  if (!row) throw notFoundExplained("You have no subscription to cancel");
  if (row.plan === "free") throw notFoundExplained("Your subscription has already ended");
  if (row.cancel_at && row.canceled_at) return row as SubscriptionRow & { cancel_at: Date; canceled_at: Date };
  const provider = paymentsOf(services);
  const cancelled = await withProvider(async () => record(services, userId, await provider.cancelAtPeriodEnd(row.provider_subscription_id, services.now()), new Date()));
  if (!cancelled.cancel_at || !cancelled.canceled_at) throw upstreamFailed("The payment provider did not record the cancellation");
  return cancelled as SubscriptionRow & { cancel_at: Date; canceled_at: Date };
}

export async function openPortal(services: Services, userId: string) {
  const row = await requireSubscription(services, userId);
  const provider = paymentsOf(services);
  return withProvider(() => provider.portal(row.customer_id, services.now()));
}

export async function invoicesOf(services: Services, userId: string, window: PageWindow) {
  return listInvoices(services.db.knex, userId, window);
}

/** The caller's usage against the plan's limits, counted by the very functions the 402 checks use. */
export async function usageOf(services: Services, userId: string) {
  const { knex } = services.db;
  const [plan, period] = await Promise.all([planOf(services, userId), usagePeriod(services, userId)]);
  const limits = limitsOf(plan);
  const [messages, personas, documents, costs] = await Promise.all([
    messagesSentIn(services, userId, period),
    countPlanPersonas(knex, userId),
    countPlanDocuments(knex, userId),
    // The period's stored replies and what they cost (issue 40).
    replyCostsOf(services, userId, period.start, period.end),
  ]);
  return { plan, period, limits, messages, personas, documents, costs };
}
