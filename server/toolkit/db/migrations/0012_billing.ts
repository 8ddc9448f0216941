import type { Knex } from "knex";

/**
 * Billing (issue 17): the account's customer at the payment provider, its one subscription as last
 * read from the provider, the invoices mirrored from the provider (the contract lists them with a
 * total, which the provider's cursor lists do not give), the ids of provider events already
 * processed (replays change nothing), and the offline provider's own objects.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("billing_customers", (table) => {
    table.uuid("user_id").primary().references("users.id").onDelete("CASCADE");
    table.text("provider").notNullable();
    table.text("customer_id").notNullable();
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.unique(["provider", "customer_id"]);
  });

  await knex.schema.createTable("billing_subscriptions", (table) => {
    table.uuid("id").primary();
    // At most one subscription per account: a new checkout replaces a record that reverted to free.
    table.uuid("user_id").notNullable().unique().references("users.id").onDelete("CASCADE");
    table.text("provider").notNullable();
    table.text("provider_subscription_id").notNullable();
    table.text("customer_id").notNullable();
    // The plan the limits follow: a paid plan, or `free` once the subscription has ended.
    table.text("plan").notNullable();
    table.text("interval").notNullable();
    // What the provider said last: its status and the plan of the price it bills now.
    table.text("provider_status").notNullable();
    table.text("provider_plan").notNullable();
    table.timestamp("current_period_start", { useTz: true }).notNullable();
    table.timestamp("current_period_end", { useTz: true }).notNullable();
    table.timestamp("cancel_at", { useTz: true });
    table.timestamp("canceled_at", { useTz: true });
    // A downgrade waiting for the period end (the provider's subscription schedule).
    table.text("scheduled_plan");
    table.timestamp("scheduled_change_at", { useTz: true });
    table.timestamp("ended_at", { useTz: true });
    // When the state written here was read from the provider: an older read never overwrites a newer one.
    table.timestamp("provider_read_at", { useTz: true }).notNullable();
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.timestamp("updated_at", { useTz: true }).notNullable();
    table.unique(["provider", "provider_subscription_id"]);
  });
  await knex.raw("ALTER TABLE billing_subscriptions ADD CONSTRAINT billing_subscriptions_plan CHECK (plan IN ('free', 'plus', 'pro', 'creator'))");
  await knex.raw("ALTER TABLE billing_subscriptions ADD CONSTRAINT billing_subscriptions_interval CHECK (interval IN ('month', 'year'))");
  // The period-end job's sweep: subscriptions with a change due.
  await knex.raw("CREATE INDEX billing_subscriptions_due ON billing_subscriptions (current_period_end) WHERE plan <> 'free'");

  await knex.schema.createTable("billing_invoices", (table) => {
    table.uuid("id").primary();
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    table.text("provider").notNullable();
    table.text("provider_invoice_id").notNullable();
    table.text("number").notNullable();
    // Minor units of `currency`.
    table.bigInteger("amount").notNullable();
    table.text("currency").notNullable();
    table.text("status").notNullable();
    table.text("plan").notNullable();
    table.text("interval").notNullable();
    table.timestamp("period_start", { useTz: true }).notNullable();
    table.timestamp("period_end", { useTz: true }).notNullable();
    table.timestamp("paid_at", { useTz: true });
    table.text("invoice_pdf");
    // When the provider created it: the list's order.
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.timestamp("updated_at", { useTz: true }).notNullable();
    table.unique(["provider", "provider_invoice_id"]);
  });
  await knex.raw("CREATE INDEX billing_invoices_user ON billing_invoices (user_id, created_at DESC, id DESC)");

  // Provider events already applied, by the provider's event id. Not user data: ids and types only.
  await knex.schema.createTable("billing_events", (table) => {
    table.text("id").primary();
    table.text("provider").notNullable();
    table.text("type").notNullable();
    table.timestamp("processed_at", { useTz: true }).notNullable();
  });
  await knex.raw("CREATE INDEX billing_events_age ON billing_events (processed_at)");

  // The offline provider's objects (customers, checkout sessions, subscriptions, invoices), shaped
  // like the real provider's and kept as JSON: what Stripe would hold for a Stripe account.
  await knex.schema.createTable("local_payment_objects", (table) => {
    table.text("id").primary();
    table.text("kind").notNullable();
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    table.jsonb("data").notNullable();
    table.timestamp("created_at", { useTz: true }).notNullable();
  });
  await knex.raw("CREATE INDEX local_payment_objects_user ON local_payment_objects (user_id, kind, created_at)");
}

export async function down(knex: Knex): Promise<void> {
  for (const name of ["local_payment_objects", "billing_events", "billing_invoices", "billing_subscriptions", "billing_customers"]) {
    await knex.schema.dropTable(name);
  }
}
