import type { Request } from "express";
import { RateLimiterPostgres, RateLimiterRes } from "rate-limiter-flexible";
import { clientAddressKey } from "../../toolkit/http/client-identity.ts";
import { rateLimited } from "../../toolkit/http/error-catalogue.ts";
import { unnamedStatements } from "../../toolkit/http/rate-limit.ts";
import type { Services } from "../../toolkit/services.ts";
import { giveBackDailyMessage, takeDailyMessage } from "./store.ts";

/**
 * The limits on an embedded persona's anonymous visitors (docs/adr/0317-guest-usage-counts-against-the-owner.md):
 * messages per visitor and per client address a minute, new visitors per address an hour (so that
 * starting over as a new visitor buys nothing), and the persona's daily cap, which its owner sets.
 * The first three are counted in PostgreSQL on every call, never batched, like the auth limits:
 * they must hold exactly across processes, and they are small.
 */

interface Limiters {
  perGuest: RateLimiterPostgres;
  perAddress: RateLimiterPostgres;
  newGuests: RateLimiterPostgres;
}

// One set per database pool (tests run several services in one process).
const made = new WeakMap<object, Limiters>();

function limitersOf(services: Services): Limiters {
  const { pool } = services.db;
  let limiters = made.get(pool);
  if (!limiters) {
    const limiter = (keyPrefix: string, points: number, duration: number) =>
      new RateLimiterPostgres({
        storeClient: unnamedStatements(pool),
        storeType: "pool",
        tableName: "rate_limits",
        tableCreated: true,
        clearExpiredByTimeout: false,
        keyPrefix,
        points,
        duration,
      });
    const { embeds } = services.config;
    limiters = {
      perGuest: limiter("embed-guest", embeds.guestMessagesPerMinute, 60),
      perAddress: limiter("embed-ip", embeds.ipMessagesPerMinute, 60),
      newGuests: limiter("embed-new-guest", embeds.guestsPerIpPerHour, 60 * 60),
    };
    made.set(pool, limiters);
  }
  return limiters;
}

/** 429 with the longest wait of the counts that refused; anything else that failed is thrown as it is. */
async function settle(counts: Promise<unknown>[], message: (seconds: number) => string): Promise<void> {
  const outcomes = await Promise.allSettled(counts);
  let waitMs = 0;
  for (const outcome of outcomes) {
    if (outcome.status === "fulfilled") continue;
    if (!(outcome.reason instanceof RateLimiterRes)) throw outcome.reason;
    waitMs = Math.max(waitMs, outcome.reason.msBeforeNext);
  }
  if (!waitMs) return;
  const retryAfter = Math.max(1, Math.ceil(waitMs / 1000));
  throw rateLimited(message(retryAfter), retryAfter);
}

/**
 * Counts one message (or one spoken reply) of a visitor: per visitor and per client address. Both
 * are counted on every call, so a refusal by one still counts against the other.
 */
export async function countVisitorMessage(services: Services, req: Request, guestId: string): Promise<void> {
  const { perGuest, perAddress } = limitersOf(services);
  await settle([perGuest.consume(guestId), perAddress.consume(clientAddressKey(req))], (s) => `Too many messages; wait ${s} s before sending another`);
}

/** Counts a new visitor against the client's address. */
export async function countNewVisitor(services: Services, req: Request): Promise<void> {
  await settle([limitersOf(services).newGuests.consume(clientAddressKey(req))], (s) => `Too many new chats from this address; retry in ${s} s`);
}

/** The UTC day of `at`, as the daily cap counts it (`2026-11-24`). */
export function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/** Seconds until the next UTC day, when the daily cap starts again. */
function secondsToTomorrow(at: Date): number {
  const next = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate() + 1);
  return Math.max(1, Math.ceil((next - at.getTime()) / 1000));
}

/** One of the persona's visitor messages of today, taken; give it back if the turn is refused after all. */
export interface DailyMessage {
  giveBack(): Promise<void>;
}

/** Takes one of the persona's daily visitor messages, or 429 until the next UTC day. */
export async function takeVisitorDailyMessage(services: Services, personaId: string, cap: number): Promise<DailyMessage> {
  const now = services.now();
  const day = utcDay(now);
  if (!(await takeDailyMessage(services.db.knex, personaId, day, cap))) {
    const wait = secondsToTomorrow(now);
    throw rateLimited("This chat has answered all the messages it can today; come back tomorrow", wait);
  }
  let given = false;
  return {
    giveBack: async () => {
      if (given) return;
      given = true;
      await giveBackDailyMessage(services.db.knex, personaId, day);
    },
  };
}
