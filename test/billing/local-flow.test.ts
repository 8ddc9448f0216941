import type { JobHelpers } from "graphile-worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { taskList } from "../../server/areas.ts";
import { upload } from "../knowledge/helpers.ts";
import { expectApiError, expectError, expectOk } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import type { TestUser } from "../support/users.ts";
import { checkout, DAY, expectedProration, keyedUser, outboxTypes, RETURN, TestClock } from "./support.ts";

// The offline payments provider (no STRIPE_SECRET_KEY): the local checkout page and its form, the
// same subscription states and events as Stripe, periods moved by the period-end job.

const form = (fields: Record<string, string>) => ({
  method: "POST",
  redirect: "manual" as const,
  headers: { "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams(fields).toString(),
});

const tokenOf = (html: string) => /name="csrf_token" value="([^"]+)"/.exec(html)?.[1];

describe("billing on the offline provider", () => {
  let service: TestService;
  const clock = new TestClock();
  const periodEndTask = (user: TestUser) => taskList(service.services).billing_period_end!({ user_id: user.id }, {} as JobHelpers);
  const userPlan = async (user: TestUser) => (await service.services.db.knex("users").where({ id: user.id }).first("plan")).plan as string;

  beforeAll(async () => {
    service = await startTestService({ now: clock.now, env: { AUTO_AVATARS: "false" } });
  });

  afterAll(async () => {
    await service?.close();
  });

  async function page(url: string) {
    const response = await fetch(url);
    const html = await response.text();
    return { response, html, token: tokenOf(html) };
  }

  it("the checkout page sells the plan; its form needs the page's token; Cancel goes back, Pay starts the subscription", async () => {
    const ada = await keyedUser(service);
    const session = await checkout(service, ada, "plus", "month");
    expect(session.checkout_url).toBe(`${service.url}/v1/billing/local-checkout/${session.session_id}`);

    const shown = await page(session.checkout_url);
    expect(shown.response.status).toBe(200);
    expect(shown.response.headers.get("content-type")).toMatch(/^text\/html/);
    expect(shown.response.headers.get("content-security-policy")).toBe("default-src 'none'; style-src 'unsafe-inline'; form-action 'self' https://app.example.com; frame-ancestors 'none'");
    expect(shown.response.headers.get("x-frame-options")).toBe("DENY");
    expect(shown.html).toContain("<h1>Plus, monthly: 9.99 USD</h1>");
    expect(shown.token).toBeDefined();

    // Without the page's token, or with another's, or an hour later: 400 and nothing happens.
    const noToken = await fetch(session.checkout_url, form({ action: "pay" }));
    expect(noToken.status).toBe(400);
    await expectError(await fetch(session.checkout_url, form({ action: "pay", csrf_token: `${clock.now().getTime()}.${"A".repeat(43)}` })), 400, "invalid_request");
    const otherCreated = clock.now().getTime();
    const other = await checkout(service, await keyedUser(service), "pro", "year");
    const otherToken = (await page(other.checkout_url)).token!;
    await expectError(await fetch(session.checkout_url, form({ action: "pay", csrf_token: otherToken })), 400, "invalid_request");
    clock.set(new Date(clock.now().getTime() + 61 * 60_000));
    await expectError(await fetch(session.checkout_url, form({ action: "pay", csrf_token: shown.token! })), 400, "invalid_request");
    await expectApiError(service.clientFor(ada).GET("/v1/billing/subscription"), 404, "not_found");

    const fresh = (await page(session.checkout_url)).token!;
    const cancelled = await fetch(session.checkout_url, form({ action: "cancel", csrf_token: fresh }));
    expect(cancelled.status).toBe(303);
    expect(cancelled.headers.get("location")).toBe(RETURN.cancel_url);
    await expectApiError(service.clientFor(ada).GET("/v1/billing/subscription"), 404, "not_found");

    const paid = await fetch(session.checkout_url, form({ action: "pay", csrf_token: fresh }));
    expect(paid.status).toBe(303);
    expect(paid.headers.get("location")).toBe(RETURN.success_url);
    const subscription = await expectOk(service.clientFor(ada).GET("/v1/billing/subscription"));
    expect(subscription).toMatchObject({ plan: "plus", status: "active", interval: "month", current_period_start: clock.now().toISOString() });
    expect(subscription.payment_customer_id).toMatch(/^cus_local_/);
    expect(await userPlan(ada)).toBe("plus");
    expect(await outboxTypes(service, ada.id)).toEqual(["subscription.created"]);
    const invoices = await expectOk(service.clientFor(ada).GET("/v1/billing/invoices"));
    expect(invoices.data).toMatchObject([{ amount: 999, status: "paid", plan: "plus", interval: "month", invoice_pdf: null }]);
    expect(invoices.data[0]!.number).toMatch(/^LOCAL-\d{6}$/);

    // Paying again, or for an expired checkout: 409; the page says it is complete.
    await expectError(await fetch(session.checkout_url, form({ action: "pay", csrf_token: fresh })), 409, "conflict");
    const done = await page(session.checkout_url);
    expect(done.html).toContain("This checkout is complete");
    expect(done.token).toBeUndefined();
    // A token from the page's last half hour, used once the checkout's 24 hours are over.
    clock.set(new Date(otherCreated + 23.5 * 60 * 60_000));
    const late = (await page(other.checkout_url)).token!;
    clock.set(new Date(otherCreated + 24.2 * 60 * 60_000));
    await expectError(await fetch(other.checkout_url, form({ action: "pay", csrf_token: late })), 409, "conflict");
    expect((await page(other.checkout_url)).html).toContain("This checkout has expired");
  });

  it("two Pay clicks at once start one subscription", async () => {
    const eve = await keyedUser(service);
    const session = await checkout(service, eve, "pro", "month");
    const token = (await page(session.checkout_url)).token!;
    const answers = await Promise.all([1, 2].map(() => fetch(session.checkout_url, form({ action: "pay", csrf_token: token }))));
    expect(answers.map((answer) => answer.status).sort()).toEqual([303, 409]);
    expect(await service.services.db.knex("local_payment_objects").where({ user_id: eve.id, kind: "subscription" })).toHaveLength(1);
    expect(await outboxTypes(service, eve.id)).toEqual(["subscription.created"]);
  });

  it("an unknown checkout is a 404 on the page and on the form", async () => {
    const unknown = `${service.url}/v1/billing/local-checkout/0193b5d9-0a1b-7c2d-9e3f-4a5b6c7d8e13`;
    expect((await fetch(unknown)).status).toBe(404);
    await expectError(await fetch(unknown, form({ action: "pay", csrf_token: "1.x" })), 404, "not_found");
  });

  it("upgrade, downgrade at the period end and cancellation run the same state machine; the period-end job moves them", async () => {
    const bob = await keyedUser(service);
    const session = await checkout(service, bob, "plus", "month");
    const token = (await page(session.checkout_url)).token!;
    expect((await fetch(session.checkout_url, form({ action: "pay", csrf_token: token }))).status).toBe(303);
    const started = await expectOk(service.clientFor(bob).GET("/v1/billing/subscription"));
    const start = Date.parse(started.current_period_start);
    const end = Date.parse(started.current_period_end);

    clock.set(new Date(start + 7 * DAY));
    const upgraded = await expectOk(service.clientFor(bob).PUT("/v1/billing/subscription", { body: { plan: "creator" } }));
    expect(upgraded).toMatchObject({ plan: "creator", previous_plan: "plus", proration_amount: expectedProration(999, 4999, start / 1000, end / 1000, clock.seconds) });
    expect(await userPlan(bob)).toBe("creator");

    expect(upgraded).toMatchObject({ pending_plan: null, pending_change_at: null });
    const downgrade = await expectOk(service.clientFor(bob).PUT("/v1/billing/subscription", { body: { plan: "pro" } }));
    expect(downgrade).toMatchObject({ plan: "pro", previous_plan: "creator", proration_amount: 0, scheduled_change_at: started.current_period_end });
    expect(downgrade).toMatchObject({ pending_plan: "pro", pending_change_at: started.current_period_end });
    expect(await userPlan(bob)).toBe("creator");
    // The read shows the plan paid for now and the downgrade waiting for the period end (issue 34).
    expect(await expectOk(service.clientFor(bob).GET("/v1/billing/subscription"))).toMatchObject({ plan: "creator", pending_plan: "pro", pending_change_at: started.current_period_end });
    // Asking for the current plan while a downgrade waits drops the downgrade; asking again is a 409.
    const kept = await expectOk(service.clientFor(bob).PUT("/v1/billing/subscription", { body: { plan: "creator" } }));
    expect(kept).toMatchObject({ plan: "creator", previous_plan: "creator", scheduled_change_at: null, pending_plan: null, pending_change_at: null });
    expect(await expectOk(service.clientFor(bob).GET("/v1/billing/subscription"))).toMatchObject({ plan: "creator", pending_plan: null, pending_change_at: null });
    await expectApiError(service.clientFor(bob).PUT("/v1/billing/subscription", { body: { plan: "creator" } }), 409, "conflict");
    await expectOk(service.clientFor(bob).PUT("/v1/billing/subscription", { body: { plan: "pro" } }));
    // A second downgrade replaces the first: one change waits at a time.
    await expectOk(service.clientFor(bob).PUT("/v1/billing/subscription", { body: { plan: "plus" } }));
    expect(await expectOk(service.clientFor(bob).GET("/v1/billing/subscription"))).toMatchObject({ plan: "creator", pending_plan: "plus" });
    await expectOk(service.clientFor(bob).PUT("/v1/billing/subscription", { body: { plan: "pro" } }));
    expect(await expectOk(service.clientFor(bob).GET("/v1/billing/subscription"))).toMatchObject({ plan: "creator", pending_plan: "pro", pending_change_at: started.current_period_end });

    // Nothing happens before the period end.
    clock.set(new Date(end - 60_000));
    await periodEndTask(bob);
    expect(await userPlan(bob)).toBe("creator");
    expect(await expectOk(service.clientFor(bob).GET("/v1/billing/subscription"))).toMatchObject({ plan: "creator", pending_plan: "pro" });
    clock.set(new Date(end + 60_000));
    await periodEndTask(bob);
    expect(await userPlan(bob)).toBe("pro");
    const renewed = await expectOk(service.clientFor(bob).GET("/v1/billing/subscription"));
    // Taken effect: the plan is the new one and nothing is pending any more.
    expect(renewed).toMatchObject({ plan: "pro", current_period_start: started.current_period_end, pending_plan: null, pending_change_at: null });
    const invoices = await expectOk(service.clientFor(bob).GET("/v1/billing/invoices"));
    expect(invoices.data.map((invoice) => [invoice.plan, invoice.amount])).toEqual([
      ["pro", 1999],
      ["creator", upgraded.proration_amount],
      ["plus", 999],
    ]);

    // A downgrade cannot be asked for while a cancellation is pending: it would never take effect.
    const cancelled = await expectOk(service.clientFor(bob).DELETE("/v1/billing/subscription"));
    expect(cancelled.cancel_at).toBe(renewed.current_period_end);
    await expectApiError(service.clientFor(bob).PUT("/v1/billing/subscription", { body: { plan: "plus" } }), 409, "conflict");
    clock.set(new Date(Date.parse(renewed.current_period_end) + 1000));
    await taskList(service.services).billing_sweep!({}, {} as JobHelpers);
    expect(await userPlan(bob)).toBe("free");
    expect(await expectOk(service.clientFor(bob).GET("/v1/billing/subscription"))).toMatchObject({ plan: "free" });
    expect(await outboxTypes(service, bob.id)).toEqual(["subscription.created", "subscription.cancelled"]);
    const portal = await expectOk(service.clientFor(bob).POST("/v1/billing/portal"));
    expect(portal.portal_url).toBe(service.url);
  });

  it("a cancellation replaces a pending downgrade: the read shows the cancellation and nothing pending; another account sees none of it", async () => {
    const cleo = await keyedUser(service);
    const session = await checkout(service, cleo, "creator", "year");
    expect((await fetch(session.checkout_url, form({ action: "pay", csrf_token: (await page(session.checkout_url)).token! }))).status).toBe(303);
    const client = service.clientFor(cleo);
    const started = await expectOk(client.GET("/v1/billing/subscription"));
    expect(started).toMatchObject({ plan: "creator", interval: "year", pending_plan: null, pending_change_at: null });

    await expectOk(client.PUT("/v1/billing/subscription", { body: { plan: "plus" } }));
    expect(await expectOk(client.GET("/v1/billing/subscription"))).toMatchObject({ plan: "creator", pending_plan: "plus", pending_change_at: started.current_period_end });
    // Another account reads its own state only: no subscription at all.
    await expectApiError(service.clientFor(await keyedUser(service)).GET("/v1/billing/subscription"), 404, "not_found");

    const cancelled = await expectOk(client.DELETE("/v1/billing/subscription"));
    expect(cancelled).toMatchObject({ plan: "creator", cancel_at: started.current_period_end });
    expect(await expectOk(client.GET("/v1/billing/subscription"))).toMatchObject({ plan: "creator", cancel_at: started.current_period_end, pending_plan: null, pending_change_at: null });
    expect(await service.services.db.knex("billing_subscriptions").where({ user_id: cleo.id }).first()).toMatchObject({ scheduled_plan: null, scheduled_change_at: null });
  });

  it("GET /v1/billing/usage agrees with what the 402 checks count, on the free plan and in a paid period", async () => {
    const carol = await keyedUser(service);
    const client = service.clientFor(carol);
    const persona = await expectOk(client.POST("/v1/personas", { body: { name: "Counter", instructions: "Be brief.", greeting_message: "Hi." } }), 201);
    await expectOk(upload(service, carol, persona.id, "notes.txt", "Counting is fun."), 202);
    const conversation = await expectOk(client.POST("/v1/conversations", { body: { persona_id: persona.id } }), 201);
    const send = () => client.POST("/v1/conversations/{id}/messages", { params: { path: { id: conversation.id } }, body: { content: "one more" } });

    const free = await expectOk(client.GET("/v1/billing/usage"));
    const monthStart = new Date(Date.UTC(clock.now().getUTCFullYear(), clock.now().getUTCMonth(), 1));
    expect(free).toMatchObject({ plan: "free", period_start: monthStart.toISOString(), usage: { messages_sent: 0, personas_created: 1, knowledge_docs: 1 } });
    await service.services.db.knex("usage_counters").insert({ user_id: carol.id, period_start: free.period_start.slice(0, 10), messages_sent: 199 });
    await expectOk(send(), 201);
    const refused = await expectApiError(send(), 402, "plan_limit_exceeded");
    const atLimit = await expectOk(client.GET("/v1/billing/usage"));
    expect(atLimit.usage.messages_sent).toBe((refused.error.details as { used: number }).used);
    expect(atLimit.usage.messages_sent).toBe(atLimit.usage.messages_limit);

    // Subscribed: the period is the subscription's, and its counter is the one the 402 check uses.
    const session = await checkout(service, carol, "plus", "month");
    expect((await fetch(session.checkout_url, form({ action: "pay", csrf_token: (await page(session.checkout_url)).token! }))).status).toBe(303);
    const paid = await expectOk(client.GET("/v1/billing/usage"));
    const subscription = await expectOk(client.GET("/v1/billing/subscription"));
    expect(paid).toMatchObject({ plan: "plus", period_start: subscription.current_period_start, period_end: subscription.current_period_end, usage: { messages_sent: 0, messages_limit: 2000 } });
    await service.services.db.knex("usage_counters").insert({ user_id: carol.id, period_start: paid.period_start.slice(0, 10), messages_sent: 1999 });
    await expectOk(send(), 201);
    const again = await expectApiError(send(), 402, "plan_limit_exceeded");
    expect(again.error.details).toEqual({ limit: 2000, used: 2000, plan: "plus" });
    expect((await expectOk(client.GET("/v1/billing/usage"))).usage).toMatchObject({ messages_sent: 2000, personas_created: 1, knowledge_docs: 1 });

    // The period ended and its renewal is not recorded yet: both count in the next period.
    clock.set(new Date(Date.parse(subscription.current_period_end) + 60_000));
    const next = await expectOk(client.GET("/v1/billing/usage"));
    expect(next).toMatchObject({ period_start: subscription.current_period_end, usage: { messages_sent: 0 } });
    await expectOk(send(), 201);
    expect((await expectOk(client.GET("/v1/billing/usage"))).usage.messages_sent).toBe(1);
  });

  it("refuses each bad input with a 400 naming the field, and writes nothing", async () => {
    const dan = await keyedUser(service);
    const client = service.clientFor(dan);
    const body = { plan: "plus" as const, interval: "month" as const, ...RETURN };
    for (const [field, value] of [
      ["success_url", "javascript:alert(1)"],
      ["success_url", "ftp://app.example.com/done"],
      ["cancel_url", "data:text/html,hi"],
      ["cancel_url", "https://someone:secret@app.example.com/"],
      ["success_url", "/billing/success"],
      ["success_url", `https://app.example.com/${"a".repeat(2040)}`],
    ] as const) {
      const refused = await expectApiError(client.POST("/v1/billing/checkout", { body: { ...body, [field]: value } }), 400, "invalid_request");
      expect(JSON.stringify(refused.error.details)).toContain(field);
    }
    for (const bad of [{ ...body, plan: "free" }, { ...body, interval: "week" }, { plan: "plus", interval: "month" }, { ...body, plan: 3 }]) {
      await expectApiError(client.POST("/v1/billing/checkout", { body: bad as typeof body }), 400, "invalid_request");
    }
    await expectApiError(client.PUT("/v1/billing/subscription", { body: { plan: "free" as "plus" } }), 400, "invalid_request");
    await expectApiError(client.PUT("/v1/billing/subscription", { body: {} as { plan: "plus" } }), 400, "invalid_request");
    await expectApiError(client.GET("/v1/billing/invoices", { params: { query: { limit: 101 } } }), 400, "invalid_request");
    await expectApiError(client.GET("/v1/billing/invoices", { params: { query: { limit: 0 } } }), 400, "invalid_request");
    await expectApiError(client.GET("/v1/billing/invoices", { params: { query: { offset: -1 } } }), 400, "invalid_request");
    expect(await expectOk(client.GET("/v1/billing/invoices", { params: { query: { limit: 100, offset: 5 } } }))).toEqual({ data: [], total: 0, limit: 100, offset: 5 });
    // The offline provider sends no webhooks: every event is refused.
    const event = { id: "evt_1", type: "checkout.session.completed", data: { object: { id: "cs_1" } } };
    await expectApiError(service.api.POST("/v1/billing/webhook", { params: { header: { "Stripe-Signature": "t=1,v1=00" } }, body: event }), 400, "invalid_request");

    expect(await service.services.db.knex("billing_customers").where({ user_id: dan.id }).first()).toBeUndefined();
    expect(await service.services.db.knex("local_payment_objects").where({ user_id: dan.id }).first()).toBeUndefined();
    // Without a subscription: 404, not 409.
    await expectApiError(client.PUT("/v1/billing/subscription", { body: { plan: "pro" } }), 404, "not_found");
  });
});
