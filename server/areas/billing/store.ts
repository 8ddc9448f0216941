import type { Knex } from "knex";
import { offsetPage } from "../../toolkit/db/paging.ts";
import type { PageWindow } from "../../toolkit/http/paging.ts";

export interface SubscriptionRow {
  id: string;
  user_id: string;
  provider: string;
  provider_subscription_id: string;
  customer_id: string;
  plan: string;
  interval: "month" | "year";
  provider_status: string;
  provider_plan: string;
  current_period_start: Date;
  current_period_end: Date;
  cancel_at: Date | null;
  canceled_at: Date | null;
  scheduled_plan: string | null;
  scheduled_change_at: Date | null;
  ended_at: Date | null;
  provider_read_at: Date;
  created_at: Date;
  updated_at: Date;
  /** The plan change running now (claimPlanChange), and until when its claim holds. */
  change_claim?: string | null;
  change_claimed_until?: Date | null;
}

export interface InvoiceRow {
  id: string;
  user_id: string;
  provider: string;
  provider_invoice_id: string;
  number: string;
  amount: string | number;
  currency: string;
  status: string;
  plan: string;
  interval: string;
  period_start: Date;
  period_end: Date;
  paid_at: Date | null;
  invoice_pdf: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface CustomerRow {
  user_id: string;
  provider: string;
  customer_id: string;
  created_at: Date;
}

// ---------------------------------------------------------------- customers

export async function customerOf(knex: Knex, userId: string, provider: string): Promise<CustomerRow | undefined> {
  return knex("billing_customers").where({ user_id: userId, provider }).first();
}

/** Keeps the first customer recorded for the user (a concurrent checkout may have made one). */
export async function keepCustomer(knex: Knex, row: CustomerRow): Promise<CustomerRow> {
  await knex("billing_customers").insert(row).onConflict("user_id").ignore();
  return (await knex("billing_customers").where({ user_id: row.user_id }).first()) as CustomerRow;
}

export async function userOfCustomer(knex: Knex, provider: string, customerId: string): Promise<string | undefined> {
  const row = await knex("billing_customers").where({ provider, customer_id: customerId }).first("user_id");
  return row?.user_id as string | undefined;
}

export async function userEmail(knex: Knex, userId: string): Promise<string | undefined> {
  const row = await knex("users").where({ id: userId }).whereNull("deleted_at").first("email");
  return row?.email as string | undefined;
}

// ---------------------------------------------------------------- subscriptions

export async function subscriptionOf(knex: Knex, userId: string): Promise<SubscriptionRow | undefined> {
  return knex("billing_subscriptions").where({ user_id: userId }).first();
}

/** The user's subscription row, locked until the transaction ends: changes to one account queue up. */
export async function lockSubscriptionOf(trx: Knex.Transaction, userId: string): Promise<SubscriptionRow | undefined> {
  return trx("billing_subscriptions").where({ user_id: userId }).forUpdate().first();
}

/**
 * Claims the account's subscription row for one plan change until it is released or `ttlMs` has
 * passed (by the database's clock, the same for every process), and answers the row as it stands;
 * undefined when another change holds it, or when the account has no subscription row (issue 31 L1).
 */
export async function claimPlanChange(knex: Knex, userId: string, claim: string, ttlMs: number): Promise<SubscriptionRow | undefined> {
  const rows = await knex("billing_subscriptions")
    .where({ user_id: userId })
    .where((free) => free.whereNull("change_claim").orWhere("change_claimed_until", "<", knex.fn.now()))
    .update({ change_claim: claim, change_claimed_until: knex.raw("now() + ? * interval '1 millisecond'", [ttlMs]) })
    .returning("*");
  return rows[0] as SubscriptionRow | undefined;
}

/** Gives the claim back, if it is still this one's (a row replaced meanwhile carries none). */
export async function releasePlanChange(knex: Knex, userId: string, claim: string): Promise<void> {
  await knex("billing_subscriptions").where({ user_id: userId, change_claim: claim }).update({ change_claim: null, change_claimed_until: null });
}

/** Locks the user's row, so that the first subscription of an account is written once. */
export async function lockUser(trx: Knex.Transaction, userId: string): Promise<boolean> {
  return Boolean(await trx("users").where({ id: userId }).forUpdate().first("id"));
}

export async function insertSubscription(trx: Knex.Transaction, row: SubscriptionRow): Promise<void> {
  await trx("billing_subscriptions").insert(row);
}

export async function replaceSubscription(trx: Knex.Transaction, id: string, row: Omit<SubscriptionRow, "id" | "user_id" | "created_at">): Promise<void> {
  await trx("billing_subscriptions").where({ id }).update(row);
}

export async function deleteSubscription(trx: Knex.Transaction, id: string): Promise<void> {
  await trx("billing_subscriptions").where({ id }).delete();
}

/** Paid subscriptions whose period, pending downgrade or cancellation is due by `at`. */
export async function dueSubscriptions(knex: Knex, at: Date, limit: number): Promise<SubscriptionRow[]> {
  return knex("billing_subscriptions")
    .whereNot({ plan: "free" })
    .where((due) =>
      due
        .where("current_period_end", "<=", at)
        .orWhere("scheduled_change_at", "<=", at)
        .orWhere("cancel_at", "<=", at),
    )
    .orderBy("current_period_end")
    .limit(limit);
}

/** Paid subscriptions of these accounts that the provider still bills. */
export async function liveSubscriptionsOf(knex: Knex, userIds: string[]): Promise<SubscriptionRow[]> {
  if (!userIds.length) return [];
  return knex("billing_subscriptions").whereIn("user_id", userIds).whereNull("ended_at");
}

/** Sets the plan the account's limits follow. */
export async function setUserPlan(trx: Knex.Transaction, userId: string, plan: string): Promise<void> {
  await trx("users").where({ id: userId }).update({ plan });
}

// ---------------------------------------------------------------- invoices

export async function upsertInvoice(knex: Knex, row: InvoiceRow): Promise<void> {
  await knex("billing_invoices")
    .insert(row)
    .onConflict(["provider", "provider_invoice_id"])
    .merge(["number", "amount", "currency", "status", "plan", "interval", "period_start", "period_end", "paid_at", "invoice_pdf", "updated_at"]);
}

export async function listInvoices(knex: Knex, userId: string, window: PageWindow): Promise<{ rows: InvoiceRow[]; total: number }> {
  return offsetPage<InvoiceRow>(knex("billing_invoices").where({ user_id: userId }).select("*"), "created_at DESC, id DESC", window);
}

// ---------------------------------------------------------------- events

/** Records a provider event as processed; false when it already was (a replay). */
export async function claimEvent(trx: Knex.Transaction, event: { id: string; provider: string; type: string }, at: Date): Promise<boolean> {
  const inserted = await trx("billing_events").insert({ ...event, processed_at: at }).onConflict("id").ignore().returning("id");
  return inserted.length > 0;
}

export async function purgeEvents(knex: Knex, before: Date): Promise<number> {
  return knex("billing_events").where("processed_at", "<", before).delete();
}

// ---------------------------------------------------------------- second subscriptions (issue 31 M4)

export interface DuplicateSubscriptionRow {
  id: string;
  user_id: string;
  provider: string;
  provider_subscription_id: string;
  kept_subscription_id: string;
  event_id: string;
  event_type: string;
  refunds: { id: string | null; invoice: string; amount: number; currency: string; failure: string | null }[];
  refunded_amount: number;
  currency: string | null;
  cancelled_at: Date;
  created_at: Date;
}

/** Records a second subscription cancelled and refunded; false when it was recorded already (a retried event). */
export async function recordDuplicateSubscription(trx: Knex.Transaction, row: DuplicateSubscriptionRow): Promise<boolean> {
  const inserted = await trx("billing_duplicate_subscriptions")
    .insert({ ...row, refunds: JSON.stringify(row.refunds) })
    .onConflict(["provider", "provider_subscription_id"])
    .ignore()
    .returning("id");
  return inserted.length > 0;
}

/** Whether the provider's subscription was cancelled here as an account's second one. */
export async function isDuplicateSubscription(knex: Knex, provider: string, subscriptionId: string | null): Promise<boolean> {
  if (!subscriptionId) return false;
  return (await knex("billing_duplicate_subscriptions").where({ provider, provider_subscription_id: subscriptionId }).first("id")) !== undefined;
}

// ---------------------------------------------------------------- the export

export async function billingRecordsOf(knex: Knex, userId: string) {
  const [customers, subscriptions, invoices, duplicates] = await Promise.all([
    knex("billing_customers").where({ user_id: userId }).select("provider", "customer_id", "created_at"),
    knex("billing_subscriptions").where({ user_id: userId }).select("*"),
    knex("billing_invoices").where({ user_id: userId }).orderBy([{ column: "created_at" }, { column: "id" }]).select("*"),
    knex("billing_duplicate_subscriptions").where({ user_id: userId }).orderBy([{ column: "created_at" }, { column: "id" }]).select("*"),
  ]);
  return {
    customers: customers as Record<string, unknown>[],
    subscriptions: subscriptions as SubscriptionRow[],
    invoices: invoices as InvoiceRow[],
    duplicates: duplicates as DuplicateSubscriptionRow[],
  };
}
