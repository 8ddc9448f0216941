import type { JobHelpers } from "graphile-worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { billingAccountData } from "../../server/areas/billing/account-data.ts";
import { taskList } from "../../server/areas.ts";
import { expectApiError, expectOk } from "../support/assertions.ts";
import type { TestUser } from "../support/users.ts";
import { checkout, createPersonas, keyedUser, DAY, expectedProration, outboxTypes, startStripeWorld, type StripeWorld } from "./support.ts";

// The whole billing flow through the real `stripe` package and a fake Stripe on loopback: checkout,
// the signed webhook events, plan changes with proration and schedules, the period end, failures.

describe("billing through Stripe (fake on loopback)", () => {
  let world: StripeWorld;
  let ada: TestUser;
  let periodEnd: Date;

  const settle = () => taskList(world.service.services).billing_sweep!({}, {} as JobHelpers);
  const subscriptionOf = (user: TestUser) => expectOk(world.service.clientFor(user).GET("/v1/billing/subscription"));
  const usageOf = (user: TestUser) => expectOk(world.service.clientFor(user).GET("/v1/billing/usage"));
  const userPlan = async (user: TestUser) => (await world.service.services.db.knex("users").where({ id: user.id }).first("plan")).plan as string;
  const eventCount = async () => Number((await world.service.services.db.knex("billing_events").count({ n: "*" }).first())!.n);

  beforeAll(async () => {
    world = await startStripeWorld();
    ada = await keyedUser(world.service);
  });

  afterAll(async () => {
    await world?.close();
  });

  it("checkout, then the webhook events: the subscription is active and the limits are raised", async () => {
    expect(await createPersonas(world.service, ada, 3)).toBe(201);
    expect(await createPersonas(world.service, ada, 1)).toBe(402);
    await expectApiError(world.service.clientFor(ada).GET("/v1/billing/subscription"), 404, "not_found");

    const session = await checkout(world.service, ada, "plus", "month");
    expect(session.checkout_url).toMatch(new RegExp(`^${world.fake.url}/c/pay/cs_test_`));
    expect(session.session_id).toMatch(/^cs_test_/);
    const created = world.fake.sessions.get(session.session_id)!;
    expect(created).toMatchObject({ mode: "subscription", client_reference_id: ada.id, success_url: "https://app.example.com/billing/success" });
    // Paying happens at Stripe; nothing changes here until its events arrive.
    world.fake.completeCheckout(session.session_id);
    expect(await userPlan(ada)).toBe("free");
    const delivered = await world.fake.deliverAll();
    expect(delivered.map((event) => event.type)).toEqual(["customer.subscription.created", "invoice.paid", "checkout.session.completed"]);

    const subscription = await subscriptionOf(ada);
    expect(subscription).toMatchObject({ plan: "plus", status: "active", interval: "month", cancel_at: null, canceled_at: null });
    expect(subscription.payment_customer_id).toMatch(/^cus_/);
    periodEnd = new Date(subscription.current_period_end);
    expect(await userPlan(ada)).toBe("plus");
    expect(await createPersonas(world.service, ada, 1)).toBe(201);
    const usage = await usageOf(ada);
    expect(usage).toMatchObject({ plan: "plus", period_start: subscription.current_period_start, period_end: subscription.current_period_end });
    expect(usage.usage).toMatchObject({ personas_created: 4, personas_limit: 10, messages_limit: 2000, knowledge_limit: 25 });
    expect(await outboxTypes(world.service, ada.id)).toEqual(["subscription.created"]);

    const invoices = await expectOk(world.service.clientFor(ada).GET("/v1/billing/invoices"));
    expect(invoices.total).toBe(1);
    expect(invoices.data[0]).toMatchObject({ amount: 999, currency: "usd", status: "paid", plan: "plus", interval: "month" });
    expect(invoices.data[0]!.invoice_pdf).toMatch(new RegExp(`^${world.fake.url}/invoice/in_.+/pdf$`));
    expect(invoices.data[0]!.number).toMatch(/^FAKE-/);
  });

  it("a second checkout for a paid account is a 409, and nothing is written", async () => {
    const before = world.fake.sessions.size;
    const refused = await expectApiError(
      world.service.clientFor(ada).POST("/v1/billing/checkout", { body: { plan: "pro", interval: "month", success_url: "https://app.example.com/a", cancel_url: "https://app.example.com/b" } }),
      409,
      "conflict",
    );
    expect(refused.error.message).toMatch(/PUT \/v1\/billing\/subscription/);
    expect(world.fake.sessions.size).toBe(before);
  });

  it("an upgrade applies at once with the provider's proration, previewed for the same instant", async () => {
    const before = await subscriptionOf(ada);
    const start = Date.parse(before.current_period_start) / 1000;
    const end = Date.parse(before.current_period_end) / 1000;
    world.advance(new Date(Date.parse(before.current_period_start) + 10 * DAY + 1234_000));

    const change = await expectOk(world.service.clientFor(ada).PUT("/v1/billing/subscription", { body: { plan: "pro" } }));
    const proration = expectedProration(999, 1999, start, end, world.clock.seconds);
    expect(proration).toBeGreaterThan(0);
    expect(change).toMatchObject({ plan: "pro", previous_plan: "plus", proration_amount: proration, proration_currency: "usd", scheduled_change_at: null });
    // Preview and update name the same proration date.
    const preview = world.fake.requests.find((r) => r.path === "/v1/invoices/create_preview")!;
    const update = world.fake.requests.findLast((r) => r.method === "POST" && r.path.startsWith("/v1/subscriptions/"))!;
    expect(preview.params.subscription_details).toMatchObject({ proration_behavior: "always_invoice", proration_date: String(world.clock.seconds) });
    expect(update.params).toMatchObject({ proration_behavior: "always_invoice", proration_date: String(world.clock.seconds), payment_behavior: "error_if_incomplete" });

    // On the next request, before any event arrives.
    expect(await userPlan(ada)).toBe("pro");
    expect((await usageOf(ada)).usage.personas_limit).toBe(50);
    await world.fake.deliverAll();
    const invoices = await expectOk(world.service.clientFor(ada).GET("/v1/billing/invoices"));
    expect(invoices.total).toBe(2);
    expect(invoices.data[0]).toMatchObject({ amount: proration, plan: "pro", status: "paid" });
  });

  it("a downgrade waits for the period end (a subscription schedule), and nothing existing is deleted", async () => {
    // More personas than the lower plan allows.
    expect(await createPersonas(world.service, ada, 8)).toBe(201);
    const owned = (await expectOk(world.service.clientFor(ada).GET("/v1/personas", { params: { query: { limit: 100 } } }))).total;
    expect(owned).toBe(12);

    const change = await expectOk(world.service.clientFor(ada).PUT("/v1/billing/subscription", { body: { plan: "plus" } }));
    expect(change).toMatchObject({ plan: "plus", previous_plan: "pro", proration_amount: 0, scheduled_change_at: periodEnd.toISOString() });
    expect(change).toMatchObject({ pending_plan: "plus", pending_change_at: periodEnd.toISOString() });
    const schedule = [...world.fake.schedules.values()].find((s) => s.status === "active")!;
    expect(schedule.phases).toMatchObject([{ end_date: periodEnd.getTime() / 1000 }, { start_date: periodEnd.getTime() / 1000 }]);
    // Until then the subscription and the limits stay on pro, and the read shows the downgrade waiting (issue 34).
    expect(await subscriptionOf(ada)).toMatchObject({ plan: "pro", pending_plan: "plus", pending_change_at: periodEnd.toISOString() });
    expect(await userPlan(ada)).toBe("pro");
    // Stripe's events about the schedule read the same state again.
    await world.fake.deliverAll();
    expect(await userPlan(ada)).toBe("pro");
    expect(await subscriptionOf(ada)).toMatchObject({ plan: "pro", pending_plan: "plus", pending_change_at: periodEnd.toISOString() });

    // The period ends. The job lowers the limits even before the provider has moved the subscription.
    world.advance(new Date(periodEnd.getTime() + 60_000), { provider: false });
    await settle();
    expect(await userPlan(ada)).toBe("plus");
    expect(await subscriptionOf(ada)).toMatchObject({ plan: "plus", pending_plan: null, pending_change_at: null });
    // Then Stripe moves it and says so: still plus, renewed on the plus price, nothing pending.
    world.fake.advanceTo(world.clock.seconds);
    await world.fake.deliverAll();
    const renewed = await subscriptionOf(ada);
    expect(renewed).toMatchObject({ plan: "plus", current_period_start: periodEnd.toISOString(), pending_plan: null, pending_change_at: null });
    periodEnd = new Date(renewed.current_period_end);
    const invoices = await expectOk(world.service.clientFor(ada).GET("/v1/billing/invoices"));
    expect(invoices.data[0]).toMatchObject({ amount: 999, plan: "plus" });

    // Every persona is still there; only a new one is refused, with the plan's numbers.
    expect((await expectOk(world.service.clientFor(ada).GET("/v1/personas", { params: { query: { limit: 100 } } }))).total).toBe(12);
    const refused = await expectApiError(
      world.service.clientFor(ada).POST("/v1/personas", { body: { name: "One more", instructions: "Be brief.", greeting_message: "Hi." } }),
      402,
      "plan_limit_exceeded",
    );
    expect(refused.error.details).toMatchObject({ limit: 10, used: 12, plan: "plus" });
    expect((await usageOf(ada)).usage).toMatchObject({ personas_created: 12, personas_limit: 10 });
  });

  it("a cancellation keeps the plan until the period end, then the account is free; the outbox says so once", async () => {
    const cancelled = await expectOk(world.service.clientFor(ada).DELETE("/v1/billing/subscription"));
    expect(cancelled).toMatchObject({ plan: "plus", status: "active", cancel_at: periodEnd.toISOString(), canceled_at: world.clock.now().toISOString() });
    expect(cancelled.message).toContain(periodEnd.toISOString().slice(0, 10));
    // Cancelling again answers the pending cancellation unchanged.
    expect(await expectOk(world.service.clientFor(ada).DELETE("/v1/billing/subscription"))).toEqual(cancelled);
    await world.fake.deliverAll();
    expect(await subscriptionOf(ada)).toMatchObject({ plan: "plus", cancel_at: periodEnd.toISOString() });
    expect(await userPlan(ada)).toBe("plus");
    expect(await outboxTypes(world.service, ada.id)).toEqual(["subscription.created", "subscription.cancelled"]);

    world.advance(new Date(periodEnd.getTime() + 1000));
    const delivered = await world.fake.deliverAll();
    expect(delivered.map((event) => event.type)).toEqual(["customer.subscription.deleted"]);
    expect(await subscriptionOf(ada)).toMatchObject({ plan: "free", cancel_at: periodEnd.toISOString() });
    expect(await userPlan(ada)).toBe("free");
    expect((await usageOf(ada)).usage).toMatchObject({ personas_limit: 3, messages_limit: 200 });
    expect(await outboxTypes(world.service, ada.id)).toEqual(["subscription.created", "subscription.cancelled"]);

    // Ended: no plan change, nothing more to cancel, but a new checkout may start.
    await expectApiError(world.service.clientFor(ada).PUT("/v1/billing/subscription", { body: { plan: "pro" } }), 409, "conflict");
    await expectApiError(world.service.clientFor(ada).DELETE("/v1/billing/subscription"), 404, "not_found");
    await checkout(world.service, ada, "pro", "year");
  });

  it("a failed renewal payment leaves an open invoice and the subscription in the provider's grace; a declined upgrade changes nothing", async () => {
    const bob = await keyedUser(world.service);
    world.fake.completeCheckout((await checkout(world.service, bob, "plus", "month")).session_id);
    await world.fake.deliverAll();
    const subscription = await subscriptionOf(bob);

    world.fake.failPayments = true;
    try {
      const refused = await expectApiError(world.service.clientFor(bob).PUT("/v1/billing/subscription", { body: { plan: "creator" } }), 409, "conflict");
      expect(refused.error.message).toMatch(/declined/);
      expect(await userPlan(bob)).toBe("plus");

      world.advance(new Date(Date.parse(subscription.current_period_end) + 1000));
      const delivered = await world.fake.deliverAll();
      expect(delivered.map((event) => event.type)).toEqual(["customer.subscription.updated", "invoice.payment_failed"]);
    } finally {
      world.fake.failPayments = false;
    }
    const invoices = await expectOk(world.service.clientFor(bob).GET("/v1/billing/invoices"));
    expect(invoices.data[0]).toMatchObject({ status: "open", paid_at: null, amount: 999 });
    const row = await world.service.services.db.knex("billing_subscriptions").where({ user_id: bob.id }).first();
    expect(row).toMatchObject({ provider_status: "past_due", plan: "plus" });
    // Stripe's retries are over: it cancels, and the account is free.
    const providerId = row.provider_subscription_id as string;
    await world.provider.cancelNow(providerId);
    await world.fake.deliverAll();
    expect(await userPlan(bob)).toBe("free");
    expect(await outboxTypes(world.service, bob.id)).toEqual(["subscription.created", "subscription.cancelled"]);
  });

  it("a pending downgrade is dropped by asking for the current plan, and replaced by a cancellation; the read follows each", async () => {
    const ivy = await keyedUser(world.service);
    const client = world.service.clientFor(ivy);
    world.fake.completeCheckout((await checkout(world.service, ivy, "creator", "month")).session_id);
    await world.fake.deliverAll();
    const started = await subscriptionOf(ivy);
    expect(started).toMatchObject({ plan: "creator", pending_plan: null, pending_change_at: null });

    await expectOk(client.PUT("/v1/billing/subscription", { body: { plan: "pro" } }));
    await world.fake.deliverAll();
    expect(await subscriptionOf(ivy)).toMatchObject({ plan: "creator", pending_plan: "pro", pending_change_at: started.current_period_end });
    // Dropped: the schedule is released at Stripe, and the read says nothing is pending.
    const kept = await expectOk(client.PUT("/v1/billing/subscription", { body: { plan: "creator" } }));
    expect(kept).toMatchObject({ plan: "creator", pending_plan: null, pending_change_at: null, scheduled_change_at: null });
    await world.fake.deliverAll();
    expect(await subscriptionOf(ivy)).toMatchObject({ plan: "creator", pending_plan: null, pending_change_at: null });

    // Asked again, then cancelled: the cancellation supersedes the downgrade at Stripe and here.
    await expectOk(client.PUT("/v1/billing/subscription", { body: { plan: "plus" } }));
    expect(await subscriptionOf(ivy)).toMatchObject({ plan: "creator", pending_plan: "plus" });
    await expectOk(client.DELETE("/v1/billing/subscription"));
    await world.fake.deliverAll();
    expect(await subscriptionOf(ivy)).toMatchObject({ plan: "creator", cancel_at: started.current_period_end, pending_plan: null, pending_change_at: null });
    const providerId = (await world.service.services.db.knex("billing_subscriptions").where({ user_id: ivy.id }).first()).provider_subscription_id as string;
    expect([...world.fake.schedules.values()].filter((s) => s.status === "active" && s.subscription === providerId)).toEqual([]);
  });

  it("a bad, stale or missing signature is a 400 and changes nothing", async () => {
    const carol = await keyedUser(world.service);
    world.fake.completeCheckout((await checkout(world.service, carol)).session_id);
    const events = world.fake.queue;
    world.fake.queue = [];
    const before = await eventCount();

    for (const options of [{ secret: "whsec_not_the_right_one" }, { timestamp: world.clock.seconds - 3600 }, { signature: "t=1,v1=00" }, { signature: "garbage" }]) {
      const answer = await world.fake.send(events[0]!, options);
      expect(answer.status).toBe(400);
      expect((answer.body as { error: { code: string } }).error.code).toBe("invalid_request");
    }
    // A body changed after signing.
    const payload = JSON.stringify(events[0]);
    const tampered = await world.service.fetch("/v1/billing/webhook", {
      method: "POST",
      headers: { "content-type": "application/json", "stripe-signature": world.fake.sign(payload) },
      body: payload.replace(events[0]!.id, "evt_forged"),
    });
    expect(tampered.status).toBe(400);
    const unsigned = await world.service.fetch("/v1/billing/webhook", { method: "POST", headers: { "content-type": "application/json" }, body: payload });
    expect(unsigned.status).toBe(400);

    expect(await eventCount()).toBe(before);
    expect(await userPlan(carol)).toBe("free");
    await expectApiError(world.service.clientFor(carol).GET("/v1/billing/subscription"), 404, "not_found");

    // Properly signed, the same events apply.
    for (const event of events) expect((await world.fake.send(event)).status).toBe(200);
    expect(await userPlan(carol)).toBe("plus");
  });

  it("a replayed event changes nothing", async () => {
    const dan = await keyedUser(world.service);
    world.fake.completeCheckout((await checkout(world.service, dan)).session_id);
    const events = await world.fake.deliverAll();
    const created = events.find((event) => event.type === "customer.subscription.created")!;
    await expectOk(world.service.clientFor(dan).DELETE("/v1/billing/subscription"));
    await world.fake.deliverAll();
    const before = { rows: await world.service.services.db.knex("billing_subscriptions").where({ user_id: dan.id }).first(), outbox: await outboxTypes(world.service, dan.id), events: await eventCount() };

    for (const event of events) expect((await world.fake.send(event)).status).toBe(200);
    expect((await world.fake.send(created)).status).toBe(200);

    expect(await eventCount()).toBe(before.events);
    expect(await world.service.services.db.knex("billing_subscriptions").where({ user_id: dan.id }).first()).toEqual(before.rows);
    expect(await outboxTypes(world.service, dan.id)).toEqual(before.outbox);
    expect(await expectOk(world.service.clientFor(dan).GET("/v1/billing/invoices"))).toMatchObject({ total: 1 });

    // The same new event delivered twice at once (Stripe retrying while the first is in flight) applies once.
    const hal = await keyedUser(world.service);
    world.fake.completeCheckout((await checkout(world.service, hal)).session_id);
    const first = world.fake.queue.find((event) => event.type === "customer.subscription.created")!;
    world.fake.queue = [];
    const together = await Promise.all([world.fake.send(first), world.fake.send(first)]);
    expect(together.map((answer) => answer.status)).toEqual([200, 200]);
    expect(await outboxTypes(world.service, hal.id)).toEqual(["subscription.created"]);
    expect(await eventCount()).toBe(before.events + 1);
  });

  it("events delivered in reverse order, carrying stale objects, end in the provider's present state", async () => {
    const erin = await keyedUser(world.service);
    world.fake.completeCheckout((await checkout(world.service, erin)).session_id);
    const started = world.fake.queue;
    world.fake.queue = [];
    // More happens at Stripe before any event arrives: an upgrade, then a cancellation.
    const subscriptionId = [...world.fake.subscriptions.values()].findLast((s) => (s.metadata as { persona_user_id?: string }).persona_user_id === erin.id)!.id;
    const raw = world.fake.subscriptions.get(subscriptionId)!;
    const item = (raw.items as { data: { id: string }[] }).data[0]!;
    await world.provider.client.subscriptions.update(subscriptionId, { items: [{ id: item.id, price: [...world.fake.prices.values()].find((p) => p.lookup_key === "persona_pro_month")!.id }], proration_behavior: "always_invoice" });
    await world.provider.client.subscriptions.update(subscriptionId, { cancel_at_period_end: true });
    const later = world.fake.queue;
    world.fake.queue = [];

    // Newest first: the cancellation's event, the upgrade's, then the checkout's, whose payloads say "plus, not cancelled".
    for (const event of [...started, ...later].reverse()) expect((await world.fake.send(event)).status).toBe(200);
    const subscription = await subscriptionOf(erin);
    expect(subscription.plan).toBe("pro");
    expect(subscription.cancel_at).not.toBeNull();
    expect(await userPlan(erin)).toBe("pro");
    expect(await outboxTypes(world.service, erin.id)).toEqual(["subscription.created", "subscription.cancelled"]);
    expect((await expectOk(world.service.clientFor(erin).GET("/v1/billing/invoices"))).total).toBe(2);
  });

  it("the customer portal link comes from Stripe; unknown event types are acknowledged and ignored", async () => {
    const fay = await keyedUser(world.service);
    await expectApiError(world.service.clientFor(fay).POST("/v1/billing/portal"), 404, "not_found");
    world.fake.completeCheckout((await checkout(world.service, fay)).session_id);
    await world.fake.deliverAll();
    const portal = await expectOk(world.service.clientFor(fay).POST("/v1/billing/portal"));
    expect(portal.portal_url).toMatch(new RegExp(`^${world.fake.url}/p/session/bps_`));
    const request = world.fake.requests.findLast((r) => r.path === "/v1/billing_portal/sessions")!;
    expect(request.params).toMatchObject({ return_url: "https://app.example.com/billing" });

    const odd = { ...world.fake.events[0]!, id: "evt_unknown_type", type: "customer.tax_id.created" };
    expect(await world.fake.send(odd)).toMatchObject({ status: 200, body: { received: true } });
  });

  it("only the caller's own subscription, invoices and usage are ever visible", async () => {
    const eve = await keyedUser(world.service);
    const client = world.service.clientFor(eve);
    await expectApiError(client.GET("/v1/billing/subscription"), 404, "not_found");
    await expectApiError(client.PUT("/v1/billing/subscription", { body: { plan: "pro" } }), 404, "not_found");
    await expectApiError(client.DELETE("/v1/billing/subscription"), 404, "not_found");
    await expectApiError(client.POST("/v1/billing/portal"), 404, "not_found");
    expect(await expectOk(client.GET("/v1/billing/invoices"))).toEqual({ data: [], total: 0, limit: 20, offset: 0 });
    expect(await expectOk(client.GET("/v1/billing/usage"))).toMatchObject({ plan: "free", usage: { personas_created: 0 } });
    await expectApiError(world.service.api.GET("/v1/billing/usage"), 401, "unauthorized");
  });

  it("the purge cancels a live subscription at the provider first; the export carries billing records and no payment-method details", async () => {
    const gus = await keyedUser(world.service);
    world.fake.completeCheckout((await checkout(world.service, gus)).session_id);
    await world.fake.deliverAll();
    const [section] = billingAccountData;
    const rows = await section!.exportRows!({ services: world.service.services, knex: world.service.services.db.knex, userId: gus.id, personaIds: [] });
    expect(rows.map((row) => row.record)).toEqual(["customer", "subscription", "invoice"]);
    expect(rows[1]).toMatchObject({ plan: "plus", provider: "stripe" });
    expect(JSON.stringify(rows)).not.toMatch(/card|payment_method|last4/i);

    const providerId = (await world.service.services.db.knex("billing_subscriptions").where({ user_id: gus.id }).first()).provider_subscription_id as string;
    await section!.beforePurge!(world.service.services, [gus.id]);
    expect(world.fake.subscriptions.get(providerId)).toMatchObject({ status: "canceled" });
    // A provider that fails does not stop the purge.
    await world.fake.stop().catch(() => undefined);
    await expect(section!.beforePurge!(world.service.services, [gus.id])).resolves.toBeUndefined();
  });
});
