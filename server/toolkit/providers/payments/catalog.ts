import type { BillingInterval, PaidPlan } from "./types.ts";

export const PAID_PLANS: readonly PaidPlan[] = ["plus", "pro", "creator"];
export const INTERVALS: readonly BillingInterval[] = ["month", "year"];
export const CURRENCY = "usd";

/** Prices in cents (DECISIONS.md, Plans): a year costs ten months. */
export const PRICES: Record<PaidPlan, Record<BillingInterval, number>> = {
  plus: { month: 999, year: 9990 },
  pro: { month: 1999, year: 19990 },
  creator: { month: 4999, year: 49990 },
};

/** Where each plan stands, for telling an upgrade from a downgrade. */
export const PLAN_RANK: Record<PaidPlan | "free", number> = { free: 0, plus: 1, pro: 2, creator: 3 };

/** The provider's Price of a plan and interval is found by this lookup key (`persona billing sync-prices` makes them). */
export function lookupKey(plan: PaidPlan, interval: BillingInterval): string {
  return `persona_${plan}_${interval}`;
}

export function fromLookupKey(key: string | null | undefined): { plan: PaidPlan; interval: BillingInterval } | undefined {
  const match = /^persona_(plus|pro|creator)_(month|year)$/.exec(key ?? "");
  return match ? { plan: match[1] as PaidPlan, interval: match[2] as BillingInterval } : undefined;
}

/** Every lookup key with its plan, interval and amount. */
export function catalog(): { key: string; plan: PaidPlan; interval: BillingInterval; amount: number }[] {
  return PAID_PLANS.flatMap((plan) => INTERVALS.map((interval) => ({ key: lookupKey(plan, interval), plan, interval, amount: PRICES[plan][interval] })));
}

const NAMES: Record<PaidPlan, string> = { plus: "Plus", pro: "Pro", creator: "Creator" };

export function planName(plan: PaidPlan): string {
  return NAMES[plan];
}

/** The end of a billing period that starts at `start`: the same day of the next month or year, clamped to the month's end. */
export function periodEnd(start: Date, interval: BillingInterval): Date {
  const end = new Date(start);
  const day = start.getUTCDate();
  end.setUTCDate(1);
  if (interval === "month") end.setUTCMonth(end.getUTCMonth() + 1);
  else end.setUTCFullYear(end.getUTCFullYear() + 1);
  const last = new Date(Date.UTC(end.getUTCFullYear(), end.getUTCMonth() + 1, 0)).getUTCDate();
  end.setUTCDate(Math.min(day, last));
  return end;
}
