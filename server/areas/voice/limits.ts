import type { Response } from "express";
import { RateLimiterPostgres } from "rate-limiter-flexible";
import { planOf } from "../../quota/usage.ts";
import { ApiError } from "../../toolkit/http/errors.ts";
import { setHeaders, unnamedStatements } from "../../toolkit/http/rate-limit.ts";
import { SharedRateLimiter } from "../../toolkit/http/shared-rate-limiter.ts";
import type { Services } from "../../toolkit/services.ts";

export type VoiceOperation = "voice_tts" | "voice_stt";
type Tier = "free" | "pro";

/** Requests per minute (interface spec, Limits): free and plus get the free tier, pro and creator the pro tier. */
export const VOICE_LIMITS: Record<VoiceOperation, Record<Tier, number>> = {
  voice_tts: { free: 100, pro: 1000 },
  voice_stt: { free: 60, pro: 600 },
};

export function tierOf(plan: string): Tier {
  return plan === "pro" || plan === "creator" ? "pro" : "free";
}

// One limiter per operation and tier for each database: the counters live in its rate_limits table.
const limiters = new WeakMap<Services["db"], Map<string, SharedRateLimiter>>();

function limiterFor(services: Services, operation: VoiceOperation, tier: Tier): SharedRateLimiter {
  let byKey = limiters.get(services.db);
  if (!byKey) limiters.set(services.db, (byKey = new Map()));
  const name = `${operation}_${tier}`;
  let limiter = byKey.get(name);
  if (!limiter) {
    const points = VOICE_LIMITS[operation][tier];
    const store = new RateLimiterPostgres({
      storeClient: unnamedStatements(services.db.pool),
      storeType: "pool",
      tableName: "rate_limits",
      tableCreated: true,
      clearExpiredByTimeout: false,
      keyPrefix: name,
      points,
      duration: 60,
    });
    limiter = new SharedRateLimiter(store, { points });
    byKey.set(name, limiter);
  }
  return limiter;
}

/**
 * Counts the call against the user's voice limit for the operation, in PostgreSQL like the general
 * limit, and reports that limit in the X-RateLimit headers (replacing the general limit's); 429
 * with Retry-After beyond it.
 */
export async function consumeVoiceLimit(services: Services, operation: VoiceOperation, userId: string, res: Response): Promise<void> {
  const tier = tierOf(await planOf(services, userId));
  const points = VOICE_LIMITS[operation][tier];
  const decision = await limiterFor(services, operation, tier).consume(`user:${userId}`);
  setHeaders(res, points, decision);
  if (decision.allowed) return;
  const retryAfter = Math.max(1, Math.ceil(decision.msBeforeNext / 1000));
  const what = operation === "voice_tts" ? "text-to-speech" : "speech-to-text";
  throw new ApiError(429, "rate_limited", `Your plan allows ${points} ${what} requests a minute; retry in ${retryAfter} s`, { retry_after: retryAfter }, {
    "Retry-After": String(retryAfter),
  });
}
