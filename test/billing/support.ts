import { Writable } from "node:stream";
import pino from "pino";
import { expect } from "vitest";
import { StripePayments } from "../../server/toolkit/providers/payments/stripe.ts";
import { startFakeStripe, type FakeStripe } from "../fakes/stripe-server.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";

/** The return addresses of every checkout in these tests. */
export const RETURN = { success_url: "https://app.example.com/billing/success", cancel_url: "https://app.example.com/billing/cancelled" };

/** A movable clock shared by the service and the fake Stripe (whose test clock is in seconds). */
export class TestClock {
  #at: Date;
  constructor(start = new Date()) {
    // Whole seconds: Stripe's timestamps are seconds, and the service compares them with its clock.
    this.#at = new Date(Math.floor(start.getTime() / 1000) * 1000);
  }
  now = (): Date => new Date(this.#at);
  set(at: Date): void {
    this.#at = new Date(Math.floor(at.getTime() / 1000) * 1000);
  }
  get seconds(): number {
    return Math.floor(this.#at.getTime() / 1000);
  }
}

export interface StripeWorld {
  fake: FakeStripe;
  provider: StripePayments;
  service: TestService;
  clock: TestClock;
  /** Moves both clocks; the fake runs its renewals, schedules and cancellations up to then. */
  advance: (at: Date, options?: { provider?: boolean }) => void;
  close: () => Promise<void>;
}

/** The service with the real `stripe` package pointed at a fake Stripe on loopback, and the six Prices made by `syncPrices`. */
export async function startStripeWorld(env: Record<string, string> = {}, options: { log?: pino.Logger } = {}): Promise<StripeWorld> {
  const clock = new TestClock();
  const fake = await startFakeStripe({ now: clock.seconds });
  const provider = new StripePayments({
    secretKey: fake.secretKey,
    webhookSecret: fake.webhookSecret,
    apiUrl: fake.url,
    portalReturnUrl: "https://app.example.com/billing",
    maxNetworkRetries: 0,
  });
  await provider.syncPrices();
  const service = await startTestService({ providers: { payments: provider }, now: clock.now, env: { AUTO_AVATARS: "false", ...env }, ...(options.log ? { log: options.log } : {}) });
  fake.webhookUrl = `${service.url}/v1/billing/webhook`;
  return {
    fake,
    provider,
    service,
    clock,
    advance: (at, options = {}) => {
      clock.set(at);
      if (options.provider !== false) fake.advanceTo(clock.seconds);
    },
    close: async () => {
      await service.close();
      await fake.stop().catch(() => undefined);
    },
  };
}

/** Starts a checkout as `user` and answers its session. */
export async function checkout(service: TestService, user: TestUser, plan: "plus" | "pro" | "creator" = "plus", interval: "month" | "year" = "month") {
  const { data, error, response } = await service.clientFor(user).POST("/v1/billing/checkout", { body: { plan, interval, ...RETURN } });
  expect(response.status, JSON.stringify(error)).toBe(200);
  return data!;
}

/** Creates personas as `user` until it has `count`, or answers the first refusal's status. */
export async function createPersonas(service: TestService, user: TestUser, count: number): Promise<number> {
  const client = service.clientFor(user);
  for (let i = 0; i < count; i++) {
    const { response } = await client.POST("/v1/personas", { body: { name: `Persona ${i}`, instructions: "Be brief.", greeting_message: "Hello." } });
    if (response.status !== 201) return response.status;
  }
  return 201;
}

export async function outboxTypes(service: TestService, userId: string): Promise<string[]> {
  const rows = await service.services.db.knex("event_outbox").where({ user_id: userId }).orderBy("created_at").orderBy("id").select("type");
  return rows.map((row) => row.type as string);
}

/** Proration to the second, as Stripe and the fake compute it: the new plan's share of the rest of the period less the old one's. */
export function expectedProration(oldAmount: number, newAmount: number, start: number, end: number, at: number): number {
  const share = (amount: number) => Math.round((amount * (end - at)) / (end - start));
  return share(newAmount) - share(oldAmount);
}

export const DAY = 24 * 60 * 60 * 1000;

/**
 * A new user who calls with an API key: these tests move the clock by weeks, past any access
 * token's hour, and keys do not expire.
 */
export async function keyedUser(service: TestService): Promise<TestUser> {
  const user = await registerUser(service);
  const key = await apiKeyFor(service, user);
  return { ...user, auth: { "x-api-key": key } as unknown as TestUser["auth"] };
}

/** The local checkout page's form post. */
export const checkoutForm = (fields: Record<string, string>) => ({
  method: "POST",
  redirect: "manual" as const,
  headers: { "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams(fields).toString(),
});

/** The local checkout page: its status, HTML and the form's token (none when the page has no form). */
export async function localCheckoutPage(url: string) {
  const response = await fetch(url);
  const html = await response.text();
  return { response, html, token: /name="csrf_token" value="([^"]+)"/.exec(html)?.[1] };
}

/** Presses Pay on the local checkout page at `url` (the offline provider); answers the form post's answer. */
export async function payLocally(url: string): Promise<Response> {
  const { token } = await localCheckoutPage(url);
  expect(token, "the checkout page has a form").toBeDefined();
  return fetch(url, checkoutForm({ action: "pay", csrf_token: token! }));
}

/** A logger whose lines are kept (JSON, one per line), to check what the service logged. */
export function capturedLog(): { log: pino.Logger; lines: () => Record<string, unknown>[] } {
  let text = "";
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  return { log: pino({ level: "info" }, stream), lines: () => text.split("\n").filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>) };
}
