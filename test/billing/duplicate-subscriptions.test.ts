import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { billingAccountData } from "../../server/areas/billing/account-data.ts";
import { expectApiError, expectError, expectOk } from "../support/assertions.ts";
import { databaseKind, startTestService, type TestService } from "../support/service.ts";
import type { TestUser } from "../support/users.ts";
import { capturedLog, checkout, checkoutForm, keyedUser, localCheckoutPage, outboxTypes, payLocally, RETURN, startStripeWorld, TestClock, type StripeWorld } from "./support.ts";

// FINDING (issue 31 M4), fixed: checkouts A and B opened while free, A paid, then B paid: two paid
// invoices and two live subscriptions (with Stripe, a real double charge). The local checkout page
// now refuses to sell a subscription to an account that has one; with Stripe, whose hosted page the
// service does not control, the second subscription is cancelled at once and its payment refunded
// when its first event arrives, and the event and the refund are recorded.

describe(`a second subscription on the offline provider (${databaseKind})`, () => {
  let service: TestService;
  const clock = new TestClock();

  beforeAll(async () => {
    service = await startTestService({ now: clock.now, env: { AUTO_AVATARS: "false" } });
  });

  afterAll(async () => {
    await service?.close();
  });

  const localSubscriptions = (user: TestUser) => service.services.db.knex("local_payment_objects").where({ user_id: user.id, kind: "subscription" });

  it("checkouts A and B opened while free, A paid: B's page sells nothing, its form is refused, nothing is charged", async () => {
    const ada = await keyedUser(service);
    const a = await checkout(service, ada, "plus", "month");
    const b = await checkout(service, ada, "pro", "month");
    // B's page as it was shown while the account was free: with its form.
    const shownWhileFree = await localCheckoutPage(b.checkout_url);
    expect(shownWhileFree.token).toBeDefined();
    expect((await payLocally(a.checkout_url)).status).toBe(303);

    const refusedPage = await localCheckoutPage(b.checkout_url);
    expect(refusedPage.response.status).toBe(200);
    expect(refusedPage.html).toContain("Your account already has a subscription");
    expect(refusedPage.html).toContain(`href="${RETURN.cancel_url}"`);
    expect(refusedPage.token).toBeUndefined();
    const paid = await fetch(b.checkout_url, checkoutForm({ action: "pay", csrf_token: shownWhileFree.token! }));
    const refused = await expectError(paid, 409, "conflict");
    expect(refused.error.message).toMatch(/already has a subscription.*nothing was charged/i);
    // Cancel still goes back where the buyer came from.
    const back = await fetch(b.checkout_url, checkoutForm({ action: "cancel", csrf_token: shownWhileFree.token! }));
    expect([back.status, back.headers.get("location")]).toEqual([303, RETURN.cancel_url]);

    expect(await localSubscriptions(ada)).toHaveLength(1);
    expect(await expectOk(service.clientFor(ada).GET("/v1/billing/subscription"))).toMatchObject({ plan: "plus" });
    expect((await expectOk(service.clientFor(ada).GET("/v1/billing/invoices"))).data).toMatchObject([{ plan: "plus", amount: 999 }]);
    expect(await outboxTypes(service, ada.id)).toEqual(["subscription.created"]);
  });

  it("Pay pressed on three checkouts of one account at once starts one subscription", async () => {
    const eve = await keyedUser(service);
    const sessions = [await checkout(service, eve, "plus", "month"), await checkout(service, eve, "pro", "year"), await checkout(service, eve, "creator", "month")];
    const tokens = await Promise.all(sessions.map(async (session) => (await localCheckoutPage(session.checkout_url)).token!));
    const answers = await Promise.all(sessions.map((session, index) => fetch(session.checkout_url, checkoutForm({ action: "pay", csrf_token: tokens[index]! }))));
    expect(answers.map((answer) => answer.status).sort()).toEqual([303, 409, 409]);
    expect(await localSubscriptions(eve)).toHaveLength(1);
    expect((await expectOk(service.clientFor(eve).GET("/v1/billing/invoices"))).total).toBe(1);
    expect(await outboxTypes(service, eve.id)).toEqual(["subscription.created"]);
  });
});

describe(`a second subscription paid at Stripe (${databaseKind})`, () => {
  let world: StripeWorld;
  const logs = capturedLog();

  beforeAll(async () => {
    world = await startStripeWorld({}, { log: logs.log });
  });

  afterAll(async () => {
    await world?.close();
  });

  const knex = () => world.service.services.db.knex;
  const duplicatesOf = (user: TestUser) => knex()("billing_duplicate_subscriptions").where({ user_id: user.id }).orderBy("created_at");
  const rowOf = (user: TestUser) => knex()("billing_subscriptions").where({ user_id: user.id }).first();
  const invoiceOf = (subscriptionId: string) => [...world.fake.invoices.values()].find((invoice) => (invoice.parent as { subscription_details: { subscription: string } }).subscription_details.subscription === subscriptionId)!;
  const intentOf = (invoiceId: string) => ([...world.fake.invoicePayments.values()].find((payment) => payment.invoice === invoiceId)!.payment as { payment_intent: string }).payment_intent;
  const refundsOf = (subscriptionId: string) => [...world.fake.refunds.values()].filter((refund) => refund.payment_intent === intentOf(invoiceOf(subscriptionId).id));

  /** Two checkouts of `user` paid at Stripe (plus, then pro), their events queued and taken out of the queue. */
  async function twoPaid(user: TestUser) {
    const a = await checkout(world.service, user, "plus", "month");
    const b = await checkout(world.service, user, "pro", "month");
    const first = world.fake.completeCheckout(a.session_id);
    const firstEvents = world.fake.queue;
    world.fake.queue = [];
    const second = world.fake.completeCheckout(b.session_id);
    const secondEvents = world.fake.queue;
    world.fake.queue = [];
    return { first, second, firstEvents, secondEvents };
  }

  const send = async (events: { id: string }[]) => {
    for (const event of events) expect((await world.fake.send(event as never)).status, event.id).toBe(200);
  };

  it("the second subscription is cancelled at once and its payment refunded; the event, the refund and a log line record it", async () => {
    const ada = await keyedUser(world.service);
    const { first, second, firstEvents, secondEvents } = await twoPaid(ada);
    await send([...firstEvents, ...secondEvents]);
    // What the service did at Stripe: refund first, then the cancellation.
    expect((await world.fake.deliverAll()).map((event) => event.type)).toEqual(["refund.created", "customer.subscription.deleted"]);

    expect(world.fake.subscriptions.get(first.id)).toMatchObject({ status: "active" });
    expect(world.fake.subscriptions.get(second.id)).toMatchObject({ status: "canceled" });
    const secondInvoice = invoiceOf(second.id);
    const [refund, ...more] = refundsOf(second.id);
    expect(more).toEqual([]);
    expect(refund).toMatchObject({ amount: 1999, reason: "duplicate", status: "succeeded" });
    expect(refundsOf(first.id)).toEqual([]);

    expect(await rowOf(ada)).toMatchObject({ provider_subscription_id: first.id, plan: "plus", ended_at: null });
    expect(await expectOk(world.service.clientFor(ada).GET("/v1/billing/subscription"))).toMatchObject({ plan: "plus", status: "active" });
    expect(await outboxTypes(world.service, ada.id)).toEqual(["subscription.created"]);
    // The refunded invoice is not the account's to show; the duplicate's record is.
    expect((await expectOk(world.service.clientFor(ada).GET("/v1/billing/invoices"))).data).toMatchObject([{ plan: "plus", amount: 999 }]);
    const [record, ...others] = await duplicatesOf(ada);
    expect(others).toEqual([]);
    expect(record).toMatchObject({
      provider: "stripe",
      provider_subscription_id: second.id,
      kept_subscription_id: first.id,
      event_id: secondEvents[0]!.id,
      event_type: "customer.subscription.created",
      currency: "usd",
    });
    expect(Number(record.refunded_amount)).toBe(1999);
    expect(record.refunds).toEqual([{ id: refund!.id, invoice: secondInvoice.id, amount: 1999, currency: "usd", failure: null }]);
    expect(await knex()("billing_events").where({ id: secondEvents[0]!.id }).first()).toBeDefined();
    const line = logs.lines().find((entry) => entry.cancelled === second.id);
    expect(line).toMatchObject({ userId: ada.id, kept: first.id, event: secondEvents[0]!.id, refunded: 1999 });
    expect(String(line!.msg)).toMatch(/second subscription/);

    // The account's data export carries the record.
    const rows = await billingAccountData[0]!.exportRows!({ services: world.service.services, knex: knex(), userId: ada.id, personaIds: [] });
    expect(rows.filter((row) => row.record === "duplicate_subscription")).toMatchObject([{ provider_subscription_id: second.id, kept_subscription_id: first.id, refunded_amount: 1999 }]);

    // Every event again, as Stripe may send them: nothing more is refunded or recorded.
    await send([...firstEvents, ...secondEvents]);
    expect(refundsOf(second.id)).toHaveLength(1);
    expect(await duplicatesOf(ada)).toHaveLength(1);
    expect(await rowOf(ada)).toMatchObject({ provider_subscription_id: first.id, plan: "plus" });
  });

  it("a refund or a cancellation that fails at Stripe fails the event, which Stripe sends again: nothing is refunded twice", async () => {
    const bob = await keyedUser(world.service);
    const { second, firstEvents, secondEvents } = await twoPaid(bob);
    await send(firstEvents);
    const [created] = secondEvents;

    world.fake.failNext("POST refunds");
    expect((await world.fake.send(created!)).status).toBe(500);
    expect(world.fake.subscriptions.get(second.id)).toMatchObject({ status: "active" });
    expect(refundsOf(second.id)).toEqual([]);
    expect(await duplicatesOf(bob)).toEqual([]);
    expect(await knex()("billing_events").where({ id: created!.id }).first()).toBeUndefined();

    // The refund is made, then the cancellation fails: the event fails again.
    world.fake.failNext("DELETE subscriptions/:id");
    expect((await world.fake.send(created!)).status).toBe(500);
    expect(refundsOf(second.id)).toHaveLength(1);
    expect(world.fake.subscriptions.get(second.id)).toMatchObject({ status: "active" });

    expect((await world.fake.send(created!)).status).toBe(200);
    expect(refundsOf(second.id)).toHaveLength(1);
    expect(world.fake.subscriptions.get(second.id)).toMatchObject({ status: "canceled" });
    const [record] = await duplicatesOf(bob);
    expect(record).toMatchObject({ provider_subscription_id: second.id, event_id: created!.id });
    expect(Number(record.refunded_amount)).toBe(1999);
    await send(secondEvents.slice(1));
    await world.fake.deliverAll();
    expect(await userPlanOf(bob)).toBe("plus");
  });

  it("a payment Stripe will not refund (disputed) still has its subscription cancelled, and the record says why", async () => {
    const carol = await keyedUser(world.service);
    const { second, firstEvents, secondEvents } = await twoPaid(carol);
    world.fake.disputePayment(invoiceOf(second.id).id);
    await send([...firstEvents, ...secondEvents]);
    expect(world.fake.subscriptions.get(second.id)).toMatchObject({ status: "canceled" });
    expect(refundsOf(second.id)).toEqual([]);
    const [record] = await duplicatesOf(carol);
    expect(Number(record.refunded_amount)).toBe(0);
    expect(record.refunds).toMatchObject([{ id: null, invoice: invoiceOf(second.id).id, amount: 1999, currency: "usd", failure: expect.stringMatching(/charged back/) }]);
    expect(logs.lines().find((entry) => entry.cancelled === second.id)).toMatchObject({ level: 50 });
    await world.fake.deliverAll();
  });

  it("a new subscription after the account's own ended at Stripe (its news still on the way) is no duplicate", async () => {
    const dan = await keyedUser(world.service);
    const a = await checkout(world.service, dan, "plus", "month");
    const first = world.fake.completeCheckout(a.session_id);
    await world.fake.deliverAll();
    await world.provider.client.subscriptions.cancel(first.id);
    const late = world.fake.queue;
    world.fake.queue = [];
    // The account still looks subscribed here, so the API refuses a checkout: one made at Stripe directly.
    await expectApiError(world.service.clientFor(dan).POST("/v1/billing/checkout", { body: { plan: "pro", interval: "month", ...RETURN } }), 409, "conflict");
    const customerId = (await rowOf(dan)).customer_id as string;
    const session = await world.provider.createCheckout({ userId: dan.id, customerId, plan: "pro", interval: "month", successUrl: RETURN.success_url, cancelUrl: RETURN.cancel_url, at: world.clock.now() });
    const second = world.fake.completeCheckout(session.id);
    await world.fake.deliverAll();
    expect(world.fake.subscriptions.get(second.id)).toMatchObject({ status: "active" });
    expect(refundsOf(second.id)).toEqual([]);
    expect(await duplicatesOf(dan)).toEqual([]);
    expect(await rowOf(dan)).toMatchObject({ provider_subscription_id: second.id, plan: "pro" });
    await send(late);
    expect(await rowOf(dan)).toMatchObject({ provider_subscription_id: second.id, plan: "pro" });
  });

  it("the first events of two subscriptions arriving at once: one is kept, the other refunded", async () => {
    const erin = await keyedUser(world.service);
    const { first, second, firstEvents, secondEvents } = await twoPaid(erin);
    const answers = await Promise.all([world.fake.send(firstEvents[0]!), world.fake.send(secondEvents[0]!)]);
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    await send([...firstEvents.slice(1), ...secondEvents.slice(1)]);
    await world.fake.deliverAll();
    const live = [first.id, second.id].filter((id) => world.fake.subscriptions.get(id)!.status === "active");
    expect(live).toHaveLength(1);
    const cancelled = live[0] === first.id ? second.id : first.id;
    expect(refundsOf(cancelled)).toHaveLength(1);
    expect(refundsOf(live[0]!)).toEqual([]);
    expect(await rowOf(erin)).toMatchObject({ provider_subscription_id: live[0], ended_at: null });
    expect(await duplicatesOf(erin)).toMatchObject([{ provider_subscription_id: cancelled, kept_subscription_id: live[0] }]);
    expect(await outboxTypes(world.service, erin.id)).toEqual(["subscription.created"]);
  });

  const userPlanOf = async (user: TestUser) => (await knex()("users").where({ id: user.id }).first("plan")).plan as string;
});
