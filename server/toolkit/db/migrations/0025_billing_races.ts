import type { Knex } from "knex";

/**
 * Issue 31 (second outside test), billing races:
 *
 * - L1: a plan change of an account claims the account's subscription row for its whole length
 *   (`change_claim`, until `change_claimed_until`, so a crashed process's claim lapses); concurrent
 *   changes wait for it. The claim outlives a transaction because the change calls the payment
 *   provider in between (DECISIONS: Billing, one plan change at a time).
 * - L1: the offline provider's invoice numbers come from a sequence, unique under concurrency; it
 *   starts after the numbers already given (which counted invoices, so some may repeat).
 * - M4: a second live subscription of an account (two checkouts paid) is cancelled at the provider
 *   and its payments refunded; each such duplicate is kept here with the event that revealed it and
 *   the refunds made.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable("billing_subscriptions", (table) => {
    table.text("change_claim");
    table.timestamp("change_claimed_until", { useTz: true });
  });

  await knex.raw("CREATE SEQUENCE local_invoice_numbers");
  await knex.raw(`SELECT setval('local_invoice_numbers', GREATEST(
      (SELECT count(*) FROM local_payment_objects WHERE kind = 'invoice'),
      (SELECT COALESCE(max((substring(data->>'number' FROM '^LOCAL-([0-9]+)$'))::bigint), 0) FROM local_payment_objects WHERE kind = 'invoice')
    ) + 1, false)`);

  await knex.schema.createTable("billing_duplicate_subscriptions", (table) => {
    table.uuid("id").primary();
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    table.text("provider").notNullable();
    // The subscription cancelled, and the account's live one that was kept.
    table.text("provider_subscription_id").notNullable();
    table.text("kept_subscription_id").notNullable();
    // The provider event whose processing found it.
    table.text("event_id").notNullable();
    table.text("event_type").notNullable();
    // The refunds made: [{ id, invoice, amount, currency }], amounts in minor units.
    table.jsonb("refunds").notNullable();
    table.bigInteger("refunded_amount").notNullable();
    table.text("currency");
    table.timestamp("cancelled_at", { useTz: true }).notNullable();
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.unique(["provider", "provider_subscription_id"]);
  });
  await knex.raw("CREATE INDEX billing_duplicate_subscriptions_user ON billing_duplicate_subscriptions (user_id, created_at)");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable("billing_duplicate_subscriptions");
  await knex.raw("DROP SEQUENCE local_invoice_numbers");
  await knex.schema.alterTable("billing_subscriptions", (table) => {
    table.dropColumn("change_claim");
    table.dropColumn("change_claimed_until");
  });
}
