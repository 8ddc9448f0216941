import type { NextFunction, RequestHandler, Response } from "express";
import type pg from "pg";
import { RateLimiterPostgres } from "rate-limiter-flexible";
import { refused } from "../metrics/http.ts";
import type { Services } from "../services.ts";
import { clientIdentity } from "./client-identity.ts";
import { rateLimited } from "./error-catalogue.ts";
import { SharedRateLimiter, type RateDecision } from "./shared-rate-limiter.ts";

/**
 * The general per-client limit, counted in PostgreSQL so that every process on the database shares
 * it. Every response carries X-RateLimit-Limit / -Remaining / -Reset (Unix epoch seconds).
 */
export function rateLimit(services: Services): RequestHandler {
  const points = services.config.rateLimitPerMinute;
  const store = new RateLimiterPostgres({
    storeClient: unnamedStatements(services.db.pool),
    storeType: "pool",
    tableName: "rate_limits",
    tableCreated: true,
    clearExpiredByTimeout: false,
    keyPrefix: "api",
    points,
    duration: 60,
  });
  const limiter = new SharedRateLimiter(store, { points });
  const limit = String(points);
  const decide = (decision: RateDecision, res: Response, next: NextFunction) => {
    setHeaders(res, limit, decision);
    if (decision.allowed) return next();
    refused("rate_limit");
    const retryAfter = Math.max(1, Math.ceil(decision.msBeforeNext / 1000));
    next(
      rateLimited(`Too many requests; retry in ${retryAfter} s`, retryAfter),
    );
  };
  return (req, res, next) => {
    const key = clientIdentity(req);
    // Far from the limit the request is counted here, without a promise; near it, in the store.
    const local = limiter.consumeLocally(key);
    if (local) return decide(local, res, next);
    limiter.consume(key).then((decision) => decide(decision, res, next), next);
  };
}

export function setHeaders(res: Response, limit: number | string, decision: RateDecision): void {
  // setHeader, not res.set: these are plain strings, and res.set's per-call object and checks show
  // in a small request's profile.
  res.setHeader("X-RateLimit-Limit", String(limit));
  res.setHeader("X-RateLimit-Remaining", String(decision.remaining));
  res.setHeader("X-RateLimit-Reset", String(Math.ceil((Date.now() + decision.msBeforeNext) / 1000)));
}

/**
 * rate-limiter-flexible names its prepared statements. Named statements live in the server
 * session, and the embedded database is one session shared by every connection, so a second
 * connection preparing the same name fails; this adapter sends the same SQL unnamed.
 */
export function unnamedStatements(pool: pg.Pool): { query: (q: { text: string; values?: unknown[] }) => Promise<pg.QueryResult> } {
  return { query: (q) => pool.query(q.text, q.values) };
}
