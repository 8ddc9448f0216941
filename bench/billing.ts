// `npm run bench:billing`: what billing adds to every message send. A message is counted against
// the plan's quota in the usage period, which is now the paid subscription's period when there is
// one (one indexed read of billing_subscriptions before the counting statement). Measured, in one
// run, against the baseline of the counting statement alone on the calendar month (the path before
// billing): sequential reservations per second for a free account and for a subscribed one.
// Embedded database by default; BENCH_DATABASE_URL runs it on a scratch PostgreSQL database.
import { randomUUID } from "node:crypto";
import { reserveMessage, periodOf } from "../server/quota/usage.ts";
import { incrementMessagesUnderPlan } from "../server/quota/usage-store.ts";
import { PLAN_LIMITS } from "../server/quota/plans.ts";
import { loadConfig } from "../server/toolkit/config.ts";
import { startService } from "../server/runtime.ts";
import { scratchDatabase } from "./lib/database.ts";

const COUNT = Number(process.env.BENCH_SCALE ?? 1) * 2000;
const server = process.env.BENCH_DATABASE_URL;
const scratch = server ? await scratchDatabase(server, "billing") : undefined;
const config = loadConfig({
  PORT: "0",
  LOG_LEVEL: "silent",
  EMBEDDED_DB_IN_MEMORY: "true",
  WORKER_ENABLED: "false",
  ...(scratch ? { DATABASE_URL: scratch.url } : {}),
});
const service = await startService(config, { http: false });
const { knex } = service.services.db;
const now = new Date();

async function account(plan: string): Promise<string> {
  const id = randomUUID();
  await knex("users").insert({ id, email: `${id}@bench.example`, username: `b_${id.slice(0, 8)}`, password_hash: "x", plan, created_at: now, updated_at: now });
  return id;
}

const [baselineUser, freeUser, paidUser] = [await account("creator"), await account("creator"), await account("creator")];
await knex("billing_subscriptions").insert({
  id: randomUUID(), user_id: paidUser, provider: "local", provider_subscription_id: `sub_${paidUser}`, customer_id: `cus_${paidUser}`,
  plan: "creator", interval: "month", provider_status: "active", provider_plan: "creator",
  current_period_start: new Date(now.getTime() - 86_400_000), current_period_end: new Date(now.getTime() + 29 * 86_400_000),
  provider_read_at: now, created_at: now, updated_at: now,
});

const limits = Object.fromEntries(Object.entries(PLAN_LIMITS).map(([plan, l]) => [plan, l.messagesPerMonth]));
const calendar = periodOf(now).start;

// The three are measured in interleaved rounds, so that a busy machine slows each of them alike.
async function rates(variants: Record<string, () => Promise<unknown>>): Promise<Record<string, number>> {
  const spent: Record<string, number> = Object.fromEntries(Object.keys(variants).map((name) => [name, 0]));
  for (const work of Object.values(variants)) for (let i = 0; i < 50; i++) await work();
  const ROUND = 100;
  for (let done = 0; done < COUNT; done += ROUND) {
    for (const [name, work] of Object.entries(variants)) {
      const started = performance.now();
      for (let i = 0; i < ROUND; i++) await work();
      spent[name]! += performance.now() - started;
    }
  }
  return Object.fromEntries(Object.entries(spent).map(([name, ms]) => [name, COUNT / (ms / 1000)]));
}

try {
  const measured = await rates({
    baseline: () => incrementMessagesUnderPlan(knex, baselineUser, calendar, limits, PLAN_LIMITS.free.messagesPerMonth),
    free: () => reserveMessage(service.services, freeUser),
    paid: () => reserveMessage(service.services, paidUser),
  });
  const { baseline, free, paid } = measured as { baseline: number; free: number; paid: number };
  console.log(`database: ${scratch ? "postgresql" : "embedded"}; ${COUNT} sequential reservations each, in interleaved rounds of 100`);
  console.log(`baseline (counting statement, calendar month): ${baseline.toFixed(0)}/s`);
  console.log(`reserveMessage, account without subscription: ${free.toFixed(0)}/s (${(free / baseline).toFixed(2)}x baseline)`);
  console.log(`reserveMessage, subscribed account:           ${paid.toFixed(0)}/s (${(paid / baseline).toFixed(2)}x baseline)`);
} finally {
  await service.stop();
  await scratch?.drop();
}
