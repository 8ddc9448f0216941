import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectOk } from "../support/assertions.ts";
import { databaseKind, startTestService, type TestService } from "../support/service.ts";
import type { TestUser } from "../support/users.ts";
import { checkout, DAY, expectedProration, keyedUser, payLocally, startStripeWorld, TestClock, type StripeWorld } from "./support.ts";

// FINDING (issue 31 L1), fixed: six concurrent PUT /v1/billing/subscription on the offline provider
// charged the upgrade's proration several times, repeated invoice numbers, and on PostgreSQL one
// answer was an immediate downgrade with a negative charge. Plan changes of one account now run one
// at a time (a claim on the account's subscription row), and invoice numbers come from a sequence.
// On PostgreSQL the requests truly run in parallel (a pool of connections); the embedded database
// interleaves them statement by statement, which raced just the same.

const CONCURRENT = 8;

describe(`concurrent plan changes on the offline provider (${databaseKind})`, () => {
  let service: TestService;
  const clock = new TestClock();

  beforeAll(async () => {
    service = await startTestService({ now: clock.now, env: { AUTO_AVATARS: "false", RATE_LIMIT_PER_MINUTE: "100000" } });
  });

  afterAll(async () => {
    await service?.close();
  });

  /** A new user with a monthly plus subscription started now, and its period. */
  async function subscriber(): Promise<{ user: TestUser; start: number; end: number }> {
    const user = await keyedUser(service);
    const session = await checkout(service, user, "plus", "month");
    expect((await payLocally(session.checkout_url)).status).toBe(303);
    const started = await expectOk(service.clientFor(user).GET("/v1/billing/subscription"));
    return { user, start: Date.parse(started.current_period_start) / 1000, end: Date.parse(started.current_period_end) / 1000 };
  }

  const invoicesOf = async (user: TestUser) => (await expectOk(service.clientFor(user).GET("/v1/billing/invoices", { params: { query: { limit: 100 } } }))).data;

  const localInvoiceNumbers = async () =>
    (await service.services.db.knex("local_payment_objects").where({ kind: "invoice" }).select("data")).map((row) => (row.data as { number: string }).number);

  it("the same upgrade asked for eight times at once is made and charged once", async () => {
    const { user, start, end } = await subscriber();
    clock.set(new Date(start * 1000 + 7 * DAY));
    const client = service.clientFor(user);
    const answers = await Promise.all(Array.from({ length: CONCURRENT }, () => client.PUT("/v1/billing/subscription", { body: { plan: "creator" } })));

    const statuses = answers.map((answer) => answer.response.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(1);
    // The others found the plan changed: "You are already on the creator plan".
    expect(statuses.filter((status) => status !== 200).every((status) => status === 409), statuses.join(",")).toBe(true);
    const proration = expectedProration(999, 4999, start, end, clock.seconds);
    expect(answers.find((answer) => answer.response.status === 200)!.data).toMatchObject({ plan: "creator", previous_plan: "plus", proration_amount: proration });

    const invoices = await invoicesOf(user);
    expect(invoices.map((invoice) => [invoice.plan, invoice.amount])).toEqual([
      ["creator", proration],
      ["plus", 999],
    ]);
    expect(await expectOk(client.GET("/v1/billing/subscription"))).toMatchObject({ plan: "creator" });
  });

  it("mixed upgrades and downgrades at once apply one after the other: no negative charge, no immediate downgrade", async () => {
    const { user, start, end } = await subscriber();
    clock.set(new Date(start * 1000 + 10 * DAY));
    const client = service.clientFor(user);
    const targets = Array.from({ length: CONCURRENT }, (_, index) => (index % 2 ? "creator" : "pro") as "pro" | "creator");
    const answers = await Promise.all(targets.map((plan) => client.PUT("/v1/billing/subscription", { body: { plan } })));

    const rank = { plus: 1, pro: 2, creator: 3 } as Record<string, number>;
    const applied = answers.filter((answer) => answer.response.status === 200).map((answer) => answer.data!);
    expect(applied.length).toBeGreaterThan(0);
    expect(answers.every((answer) => [200, 409].includes(answer.response.status)), answers.map((a) => a.response.status).join(",")).toBe(true);
    for (const change of applied) {
      expect(change.proration_amount, JSON.stringify(change)).toBeGreaterThanOrEqual(0);
      // A move to a lower plan waits for the period end; only a move up is charged, at once.
      if (rank[change.plan]! < rank[change.previous_plan]!) expect(change).toMatchObject({ proration_amount: 0, scheduled_change_at: new Date(end * 1000).toISOString() });
      if (rank[change.plan]! > rank[change.previous_plan]!) expect(change.proration_amount).toBeGreaterThan(0);
    }
    // What was charged is what the answers said, and never more than plus to creator (one cent of rounding per step).
    const charged = (await invoicesOf(user)).filter((invoice) => invoice.amount !== 999).map((invoice) => invoice.amount);
    expect(charged.every((amount) => amount > 0)).toBe(true);
    expect(charged.reduce((sum, amount) => sum + amount, 0)).toBe(applied.reduce((sum, change) => sum + change.proration_amount, 0));
    expect(charged.reduce((sum, amount) => sum + amount, 0)).toBeLessThanOrEqual(expectedProration(999, 4999, start, end, clock.seconds) + 1);
    const subscription = await expectOk(client.GET("/v1/billing/subscription"));
    expect(["pro", "creator"]).toContain(subscription.plan);
  });

  it("invoice numbers stay unique when many buyers pay at once", async () => {
    const sessions = await Promise.all(Array.from({ length: CONCURRENT }, async () => (await checkout(service, await keyedUser(service), "pro", "month")).checkout_url));
    const paid = await Promise.all(sessions.map((url) => payLocally(url)));
    expect(paid.map((answer) => answer.status)).toEqual(sessions.map(() => 303));
    const numbers = await localInvoiceNumbers();
    expect(numbers.length).toBeGreaterThanOrEqual(CONCURRENT);
    expect(numbers.filter((number, index) => numbers.indexOf(number) !== index)).toEqual([]);
    for (const number of numbers) expect(number).toMatch(/^LOCAL-\d{6,}$/);
  });
});

describe(`concurrent plan changes through Stripe (fake on loopback, ${databaseKind})`, () => {
  let world: StripeWorld;

  beforeAll(async () => {
    world = await startStripeWorld({ RATE_LIMIT_PER_MINUTE: "100000" });
  });

  afterAll(async () => {
    await world?.close();
  });

  it("the same upgrade asked for eight times at once is previewed, made and charged once", async () => {
    const user = await keyedUser(world.service);
    const subscription = world.fake.completeCheckout((await checkout(world.service, user, "plus", "month")).session_id);
    await world.fake.deliverAll();
    const started = await expectOk(world.service.clientFor(user).GET("/v1/billing/subscription"));
    const [start, end] = [Date.parse(started.current_period_start) / 1000, Date.parse(started.current_period_end) / 1000];
    world.advance(new Date(start * 1000 + 5 * DAY));

    const client = world.service.clientFor(user);
    const answers = await Promise.all(Array.from({ length: CONCURRENT }, () => client.PUT("/v1/billing/subscription", { body: { plan: "creator" } })));
    const statuses = answers.map((answer) => answer.response.status);
    expect(statuses.filter((status) => status === 200), statuses.join(",")).toHaveLength(1);
    expect(statuses.filter((status) => status !== 200).every((status) => status === 409), statuses.join(",")).toBe(true);
    const proration = expectedProration(999, 4999, start, end, world.clock.seconds);
    expect(answers.find((answer) => answer.response.status === 200)!.data).toMatchObject({ plan: "creator", previous_plan: "plus", proration_amount: proration });
    const updates = world.fake.requests.filter((request) => request.method === "POST" && request.path === `/v1/subscriptions/${subscription.id}` && request.params.items);
    expect(updates).toHaveLength(1);
    await world.fake.deliverAll();
    expect(await expectOk(client.GET("/v1/billing/subscription"))).toMatchObject({ plan: "creator" });
  });
});
