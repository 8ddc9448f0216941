import type { components } from "../../../generated/openapi.d.ts";
import type { OfflineCheckout, ProviderCheckout } from "../../toolkit/providers/payments/types.ts";
import type { PlanChangeResult, usageOf } from "./service.ts";
import type { InvoiceRow, SubscriptionRow } from "./store.ts";
import { usdOf } from "../../toolkit/models/index.ts";

type Schemas = components["schemas"];

export function toCheckoutSession(checkout: ProviderCheckout): Schemas["CheckoutSession"] {
  return { checkout_url: checkout.url, session_id: checkout.id, expires_at: checkout.expiresAt.toISOString() };
}

export function toSubscription(row: SubscriptionRow): Schemas["Subscription"] {
  return {
    id: row.id,
    plan: row.plan as Schemas["Plan"],
    // The contract knows one status: a cancelled subscription stays active until its period ends.
    status: "active",
    interval: row.interval,
    current_period_start: row.current_period_start.toISOString(),
    current_period_end: row.current_period_end.toISOString(),
    cancel_at: row.cancel_at?.toISOString() ?? null,
    canceled_at: row.canceled_at?.toISOString() ?? null,
    // The downgrade waiting for the period end (issue 34): recorded from the provider's schedule,
    // cleared when it takes effect, is dropped or a cancellation replaces it.
    ...pendingChange(row),
    created_at: row.created_at.toISOString(),
    payment_customer_id: row.customer_id,
  };
}

function pendingChange(row: SubscriptionRow): Pick<Schemas["Subscription"], "pending_plan" | "pending_change_at"> {
  if (row.plan === "free" || !row.scheduled_plan || !row.scheduled_change_at) return { pending_plan: null, pending_change_at: null };
  return { pending_plan: row.scheduled_plan as Schemas["PaidPlan"], pending_change_at: row.scheduled_change_at.toISOString() };
}

export function toSubscriptionChange(change: PlanChangeResult): Schemas["SubscriptionChange"] {
  return {
    ...toSubscription(change.row),
    plan: change.plan,
    previous_plan: change.previousPlan as Schemas["Plan"],
    proration_amount: change.prorationAmount,
    proration_currency: change.currency,
    updated_at: change.row.updated_at.toISOString(),
    scheduled_change_at: change.scheduledChangeAt?.toISOString() ?? null,
  };
}

export function toCancellation(row: SubscriptionRow & { cancel_at: Date; canceled_at: Date }): Schemas["SubscriptionCancellation"] {
  const day = row.cancel_at.toISOString().slice(0, 10);
  return {
    id: row.id,
    plan: row.plan as Schemas["Plan"],
    status: "active",
    cancel_at: row.cancel_at.toISOString(),
    canceled_at: row.canceled_at.toISOString(),
    message: `Your subscription will end on ${day}; you keep the ${row.plan} plan until then.`,
  };
}

export function toInvoice(row: InvoiceRow): Schemas["Invoice"] {
  return {
    id: row.id,
    number: row.number,
    amount: Number(row.amount),
    currency: row.currency,
    status: row.status as Schemas["InvoiceStatus"],
    plan: row.plan as Schemas["PaidPlan"],
    interval: row.interval as Schemas["BillingInterval"],
    period_start: row.period_start.toISOString(),
    period_end: row.period_end.toISOString(),
    paid_at: row.paid_at?.toISOString() ?? null,
    invoice_pdf: row.invoice_pdf,
  };
}

export function toUsage(usage: Awaited<ReturnType<typeof usageOf>>): Schemas["Usage"] {
  return {
    plan: usage.plan as Schemas["Plan"],
    period_start: usage.period.start.toISOString(),
    period_end: usage.period.end.toISOString(),
    usage: {
      messages_sent: usage.messages,
      messages_limit: usage.limits.messagesPerMonth,
      personas_created: usage.personas,
      personas_limit: usage.limits.personas,
      knowledge_docs: usage.documents,
      knowledge_limit: usage.limits.knowledgeDocs,
    },
    costs: {
      replies: usage.costs.replies,
      own_key_replies: usage.costs.ownKeyReplies,
      input_tokens: usage.costs.inputTokens,
      output_tokens: usage.costs.outputTokens,
      cost_usd: usdOf(usage.costs.costNanos),
      by_model: usage.costs.byModel.map((model) => ({
        model: model.model,
        replies: model.replies,
        input_tokens: model.inputTokens,
        output_tokens: model.outputTokens,
        cost_usd: usdOf(model.costNanos),
      })),
    },
  };
}

/** What the local checkout page says it sells: "Plus, monthly: 9.99 USD". */
export function checkoutTitle(checkout: OfflineCheckout): string {
  const plan = checkout.plan[0]!.toUpperCase() + checkout.plan.slice(1);
  const every = checkout.interval === "month" ? "monthly" : "yearly";
  return `${plan}, ${every}: ${(checkout.amount / 100).toFixed(2)} ${checkout.currency.toUpperCase()}`;
}
