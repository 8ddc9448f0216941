import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, tempConfigDir } from "../cli/run-cli.ts";
import { startFakeStripe, type FakeStripe } from "../fakes/stripe-server.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser } from "../support/users.ts";
import { checkout } from "./support.ts";

// `persona billing`: sync-prices against a fake Stripe with the server's settings, and the account
// commands through the API.

describe("persona billing", () => {
  let fake: FakeStripe;
  let service: TestService;

  beforeAll(async () => {
    fake = await startFakeStripe();
    service = await startTestService({ env: { AUTO_AVATARS: "false" } });
  });

  afterAll(async () => {
    await service?.close();
    await fake?.stop();
  });

  it("sync-prices creates the six missing Prices by lookup key, and nothing when run again", async () => {
    const env = { STRIPE_SECRET_KEY: fake.secretKey, STRIPE_API_URL: fake.url };
    const first = await runCli(["billing", "sync-prices", "--json"], { env });
    expect(first.code, first.stderr).toBe(0);
    const made = first.json<{ data: { lookup_key: string; price_id: string; created: boolean }[] }>().data;
    expect(made.map((p) => [p.lookup_key, p.created])).toEqual([
      ["persona_plus_month", true],
      ["persona_plus_year", true],
      ["persona_pro_month", true],
      ["persona_pro_year", true],
      ["persona_creator_month", true],
      ["persona_creator_year", true],
    ]);
    const prices = [...fake.prices.values()];
    expect(prices.map((p) => [p.lookup_key, p.unit_amount, (p.recurring as { interval: string }).interval])).toContainEqual(["persona_pro_year", 19990, "year"]);
    expect([...fake.products.keys()].sort()).toEqual(["persona_creator", "persona_plus", "persona_pro"]);

    const again = await runCli(["billing", "sync-prices"], { env });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).not.toContain("created");
    expect(fake.prices.size).toBe(6);

    const unconfigured = await runCli(["billing", "sync-prices"], { env: {} });
    expect(unconfigured.code).toBe(1);
    expect(unconfigured.stderr).toContain("STRIPE_SECRET_KEY");
  });

  it("subscription and usage show the caller's own", async () => {
    const user = await registerUser(service);
    const key = await apiKeyFor(service, user);
    const env = { PERSONA_CONFIG_DIR: await tempConfigDir(), PERSONA_BASE_URL: service.url, PERSONA_API_KEY: key };

    const none = await runCli(["billing", "subscription"], { env });
    expect(none.code).toBe(4);
    const usage = await runCli(["billing", "usage", "--json"], { env });
    expect(usage.code, usage.stderr).toBe(0);
    expect(usage.json()).toMatchObject({ plan: "free", usage: { messages_limit: 200, personas_limit: 3, knowledge_limit: 5 } });

    const session = await checkout(service, user, "creator", "year");
    const token = /name="csrf_token" value="([^"]+)"/.exec(await (await fetch(session.checkout_url)).text())![1]!;
    await fetch(session.checkout_url, { method: "POST", redirect: "manual", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ action: "pay", csrf_token: token }) });

    const shown = await runCli(["billing", "subscription"], { env });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/plan:\s+creator/);
    expect(shown.stdout).toMatch(/pending_change:\s+-/);

    // A downgrade waits for the period end: the subscription shows it, in words and in JSON (issue 34).
    const downgrade = await service.clientFor(user).PUT("/v1/billing/subscription", { body: { plan: "plus" } });
    expect(downgrade.response.status).toBe(200);
    const pending = await runCli(["billing", "subscription"], { env });
    expect(pending.code, pending.stderr).toBe(0);
    expect(pending.stdout).toMatch(/plan:\s+creator/);
    expect(pending.stdout).toMatch(new RegExp(`pending_change:\\s+plus from ${downgrade.data!.scheduled_change_at}`));
    const json = await runCli(["billing", "subscription", "--json"], { env });
    expect(json.json()).toMatchObject({ plan: "creator", pending_plan: "plus", pending_change_at: downgrade.data!.scheduled_change_at });
    const human = await runCli(["billing", "usage"], { env });
    expect(human.stdout).toMatch(/plan:\s+creator/);
    expect(human.stdout).toMatch(/personas\s+0\s+200/);
  });
});
