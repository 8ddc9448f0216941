import { v7 as uuidv7 } from "uuid";
import type { Knex } from "knex";
import { planLimit } from "../toolkit/http/error-catalogue.ts";
import type { ApiError } from "../toolkit/http/errors.ts";
import type { Services } from "../toolkit/services.ts";
import { limitsOf, PLAN_LIMITS, type PlanLimits, type PlanName } from "./plans.ts";
import { periodEnd } from "../toolkit/providers/payments/catalog.ts";
import { giveBackLeased, incrementMessagesInPeriod, settleLease, type QuotaLease, type ReservationQuery, lockUserPlan, messagesSent, paidPeriodOf, userPlan } from "./usage-store.ts";

export { reservationCtes, settledLeasesPart, type ReservationOutcome, type ReservationQuery } from "./usage-store.ts";

const MESSAGE_LIMITS = Object.fromEntries(Object.entries(PLAN_LIMITS).map(([plan, limits]) => [plan, limits.messagesPerMonth]));

/** The usage period a moment falls in: the calendar month, UTC (first day as `YYYY-MM-DD`). */
export function periodOf(now: Date): { start: string; end: Date } {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { start: start.toISOString().slice(0, 10), end };
}

/** A usage period: its bounds, and the key its message counter is kept under (its first day). */
export interface UsagePeriod {
  start: Date;
  end: Date;
  key: string;
}

/**
 * The period the user's messages count in at `now`: the paid subscription's current period, or the
 * next one once it has ended and the provider's renewal is not recorded yet; else the calendar
 * month. `reservationCtes` applies the same rule in SQL.
 */
export async function usagePeriod(services: Services, userId: string, now = services.now()): Promise<UsagePeriod> {
  const paid = await paidPeriodOf(services.db.knex, userId);
  if (!paid) {
    const month = periodOf(now);
    return { start: new Date(`${month.start}T00:00:00Z`), end: month.end, key: month.start };
  }
  const [start, end] = paid.end > now ? [paid.start, paid.end] : [paid.end, periodEnd(paid.end, paid.interval)];
  return { start, end, key: start.toISOString().slice(0, 10) };
}

const WHAT: Record<keyof PlanLimits, string> = {
  messagesPerMonth: "messages this period",
  personas: "personas",
  knowledgeDocs: "knowledge documents",
};

export function planLimitExceeded(kind: keyof PlanLimits, plan: string, limit: number, used: number): ApiError {
  return planLimit(`The ${plan} plan allows ${limit} ${WHAT[kind]}; upgrade the plan for more`, {
    limit,
    used,
    plan: plan as PlanName,
  });
}

/** The user's plan (`free` for a user without one). */
export async function planOf(services: Services, userId: string): Promise<string> {
  return userPlan(services.db.knex, userId);
}

/**
 * A message counted against the monthly quota; `release` gives it back when the send failed, and
 * `settle` says its reply (whose id is `replyId`) was stored. The lease recorded with the
 * reservation gives it back if neither happens (the process died mid-reply; lease-sweep.ts).
 */
export interface MessageReservation {
  replyId: string;
  release: () => Promise<void>;
  settle: () => Promise<void>;
}

/** A new reservation's lease: the reply's id, and how long the reply may take at most. */
export function newLease(services: Services): QuotaLease {
  return { replyId: uuidv7(), seconds: leaseSeconds(services) };
}

/** How long a reply may take at most: the configured lease, or the model's timeout times its attempts plus a minute. */
export function leaseSeconds(services: Services): number {
  const { quotaLeaseSeconds, llm } = services.config;
  return quotaLeaseSeconds || Math.ceil((llm.timeoutMs * (llm.maxRetries + 1)) / 1000) + 60;
}

/**
 * Counts one message against the caller's monthly quota before the model is called, so concurrent
 * sends cannot exceed it; 402 when it is used up. Call `release` if nothing was stored after all.
 */
export async function reserveMessage(services: Services, userId: string): Promise<MessageReservation> {
  const { knex } = services.db;
  const now = services.now();
  const lease = newLease(services);
  const { count, period } = await incrementMessagesInPeriod(knex, { userId, now, calendarStart: periodOf(now).start, limits: MESSAGE_LIMITS, fallback: PLAN_LIMITS.free.messagesPerMonth, lease });
  if (count === undefined || period === undefined) {
    const plan = await userPlan(knex, userId);
    const used = await messagesSent(knex, userId, (await usagePeriod(services, userId, now)).key);
    throw planLimitExceeded("messagesPerMonth", plan, limitsOf(plan).messagesPerMonth, used);
  }
  return heldMessage(services, userId, period, lease.replyId);
}

/**
 * What a statement of another area needs to reserve a message itself, in the same round trip as
 * its own reads (the chat hot path): give it to `reservationCtes`.
 */
export function messageQuota(services: Services, userId: string): ReservationQuery {
  const now = services.now();
  return { userId, now, calendarStart: periodOf(now).start, limits: MESSAGE_LIMITS, fallback: PLAN_LIMITS.free.messagesPerMonth, lease: newLease(services) };
}

/** A message reserved in `periodStart` with the lease of `replyId`, to give back if the send fails. */
export function heldMessage(services: Services, userId: string, periodStart: string, replyId: string): MessageReservation {
  let done = false;
  const once = (work: () => Promise<void>) => async () => {
    if (done) return;
    done = true;
    await work();
  };
  return {
    replyId,
    release: once(() => giveBackLeased(services.db.knex, userId, periodStart, replyId)),
    settle: once(() => settleLease(services.db.knex, replyId)),
  };
}

/**
 * Inside `trx`: locks the user's row and throws 402 when `count` (what the user has now) is already
 * at the plan's limit of `kind`. Creations that hold this lock until they commit cannot overshoot.
 */
export async function assertUnderCountLimit(
  trx: Knex.Transaction,
  userId: string,
  kind: "personas" | "knowledgeDocs",
  count: () => Promise<number>,
): Promise<void> {
  const plan = await lockUserPlan(trx, userId);
  const limit = limitsOf(plan)[kind];
  const used = await count();
  if (used >= limit) throw planLimitExceeded(kind, plan, limit, used);
}

/** Messages counted in the period: the counter `reserveMessage` increments. */
export async function messagesSentIn(services: Services, userId: string, period: UsagePeriod): Promise<number> {
  return messagesSent(services.db.knex, userId, period.key);
}
