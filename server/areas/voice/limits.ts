import type { Response } from "express";
import { RateLimiterPostgres } from "rate-limiter-flexible";
import { planOf } from "../../quota/usage.ts";
import type { Database } from "../../toolkit/db/database.ts";
import { rateLimited } from "../../toolkit/http/error-catalogue.ts";
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

/** One limiter per operation and tier, made on first use: the counters live in the database's rate_limits table. */
export class VoiceLimiters {
  readonly #db: Pick<Database, "pool">;
  readonly #byName = new Map<string, SharedRateLimiter>();

  constructor(db: Pick<Database, "pool">) {
    this.#db = db;
  }

  for(operation: VoiceOperation, tier: Tier): SharedRateLimiter {
    const name = `${operation}_${tier}`;
    let limiter = this.#byName.get(name);
    if (!limiter) {
      limiter = limiterOf(this.#db, name, VOICE_LIMITS[operation][tier]);
      this.#byName.set(name, limiter);
    }
    return limiter;
  }
}

declare module "../../toolkit/services.ts" {
  interface AreaRegistries {
    /** The voice operations' rate limiters. */
    voiceLimiters: VoiceLimiters;
  }
}

function limiterOf(db: Pick<Database, "pool">, name: string, points: number): SharedRateLimiter {
  const store = new RateLimiterPostgres({
    storeClient: unnamedStatements(db.pool),
    storeType: "pool",
    tableName: "rate_limits",
    tableCreated: true,
    clearExpiredByTimeout: false,
    keyPrefix: name,
    points,
    duration: 60,
  });
  return new SharedRateLimiter(store, { points });
}

/**
 * Counts the call against the user's voice limit for the operation, in PostgreSQL like the general
 * limit, and reports that limit in the X-RateLimit headers (replacing the general limit's); 429
 * with Retry-After beyond it.
 */
export async function consumeVoiceLimit(services: Services, operation: VoiceOperation, userId: string, res: Response): Promise<void> {
  const tier = tierOf(await planOf(services, userId));
  const points = VOICE_LIMITS[operation][tier];
  const decision = await services.areas.voiceLimiters.for(operation, tier).consume(`user:${userId}`);
  setHeaders(res, points, decision);
  if (decision.allowed) return;
  const retryAfter = Math.max(1, Math.ceil(decision.msBeforeNext / 1000));
  const what = operation === "voice_tts" ? "text-to-speech" : "speech-to-text";
  throw rateLimited(`Your plan allows ${points} ${what} requests a minute; retry in ${retryAfter} s`, retryAfter);
}
