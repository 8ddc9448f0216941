import type { JobHelpers } from "graphile-worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { taskList } from "../../server/areas.ts";
import { expectOk } from "../support/assertions.ts";
import { outboxMails } from "../support/outbox.ts";
import { until } from "../support/wait.ts";
import { checkout, DAY, keyedUser, startStripeWorld, type StripeWorld } from "./support.ts";

// Billing's part of the account's data, end to end through the API: the data export carries the
// billing records (never payment-method details), and the purge ends the subscription at Stripe
// before the account's rows go.

describe("billing records in the data export and the account purge", () => {
  let world: StripeWorld;

  beforeAll(async () => {
    world = await startStripeWorld();
  });

  afterAll(async () => {
    await world?.close();
  });

  it("exports the customer, subscription and invoices; the purge cancels at Stripe, then deletes them", async () => {
    const { service, fake } = world;
    const knex = service.services.db.knex;
    const user = await keyedUser(service);
    fake.completeCheckout((await checkout(service, user, "pro", "year")).session_id);
    await fake.deliverAll();
    const subscription = await expectOk(service.clientFor(user).GET("/v1/billing/subscription"));

    const requested = await expectOk(service.clientFor(user).POST("/v1/auth/export-data"));
    const link = await until("the data export's link", async () => {
      const mail = (await outboxMails(service, { to: user.email, kind: "data_export" })).find((kept) => kept.text?.includes(requested.export_id));
      return mail && /https?:\/\/\S+\/download\?\S+/.exec(mail.text!)?.[0];
    }, 20_000);
    expect(link).toBeDefined();
    const archive = (await (await fetch(link!)).json()) as { billing: Record<string, unknown>[] };
    expect(archive.billing.map((row) => row.record)).toEqual(["customer", "subscription", "invoice"]);
    expect(archive.billing[1]).toMatchObject({ id: subscription.id, plan: "pro", interval: "year", payment_customer_id: subscription.payment_customer_id });
    expect(archive.billing[2]).toMatchObject({ amount: 19990, currency: "usd", status: "paid", plan: "pro" });
    expect(JSON.stringify(archive.billing)).not.toMatch(/card|payment_method|last4|brand/i);

    const providerId = (await knex("billing_subscriptions").where({ user_id: user.id }).first()).provider_subscription_id as string;
    await expectOk(service.clientFor(user).DELETE("/v1/auth/me", { body: { password: user.password } }));
    await knex("users").where({ id: user.id }).update({ deleted_at: new Date(world.clock.now().getTime() - 31 * DAY) });
    await taskList(service.services).account_purge!({}, {} as JobHelpers);
    expect(fake.subscriptions.get(providerId)).toMatchObject({ status: "canceled" });
    for (const table of ["billing_customers", "billing_subscriptions", "billing_invoices"]) expect(await knex(table).where({ user_id: user.id })).toEqual([]);
    // Stripe's word of the cancellation comes after the account is gone: acknowledged, nothing to do.
    const delivered = await fake.deliverAll();
    expect(delivered.map((event) => event.type)).toContain("customer.subscription.deleted");
  });
});
