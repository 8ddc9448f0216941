import type { Request, RequestHandler } from "express";
import { RateLimiterPostgres, RateLimiterRes } from "rate-limiter-flexible";
import { clientAddressKey } from "../../toolkit/http/client-identity.ts";
import { rateLimited } from "../../toolkit/http/error-catalogue.ts";
import { callerOf } from "../../toolkit/http/principal.ts";
import { unnamedStatements } from "../../toolkit/http/rate-limit.ts";
import { operationIdOf, type OperationId } from "../../toolkit/http/router.ts";
import type { Services } from "../../toolkit/services.ts";
import { sha256 } from "../../toolkit/tokens.ts";

const WINDOW_S = 15 * 60;

interface Rule {
  /**
   * The account the attempt is against, also counted per account (config.authAttemptsPerEmail): the
   * e-mail address the body names, or the caller's own account; none: counted per IP only.
   */
  account?: (req: Request) => string | undefined;
  /** Whether this request tries a credential or sends mail; default: every request. */
  counts?: (req: Request) => boolean;
}

function emailOf(req: Request): string | undefined {
  const email = (req.body as { email?: unknown } | undefined)?.email;
  return typeof email === "string" ? email.toLowerCase() : undefined;
}

function callerAccount(req: Request): string | undefined {
  const caller = callerOf(req);
  return caller ? `user:${caller.userId}` : undefined;
}

const sendsPassword = (req: Request) => typeof (req.body as { password?: unknown } | undefined)?.password === "string";

/**
 * The operations that try a credential or send mail. Every place that checks a password is here:
 * the consent form checks one when the user approves, so it is a login by another door and is
 * counted exactly like one (a denial checks nothing); a restore checks one as a login does; an
 * account deletion confirmed by the password checks it against the caller's own account, so a
 * stolen token cannot guess the password through it (issue 34).
 */
const LIMITED = new Map<OperationId, Rule>([
  ["auth_register", {}],
  ["auth_login", { account: emailOf }],
  ["auth_restore_me", { account: emailOf }],
  // A suspended account's data export checks the password as a login does (issue 41).
  ["account_suspension_export_data", { account: emailOf }],
  ["auth_forgot_password", { account: emailOf }],
  ["auth_delete_me", { account: callerAccount, counts: sendsPassword }],
  ["oauth_token", {}],
  ["oauth_consent", { account: emailOf, counts: (req) => (req.body as { decision?: unknown } | undefined)?.decision === "approve" }],
]);

/**
 * Limits on the calls that guess passwords or send mail: per client IP (config.authAttemptsPerIp)
 * and, where the call names one, per account: its e-mail address, or the caller's own account
 * (config.authAttemptsPerEmail), per 15 minutes. The per-account count stops a guesser who spreads
 * over many IPs. Counted in PostgreSQL on every
 * call, never batched: these are security limits, so they must hold exactly across processes.
 * Runs after the contract validator, so the e-mail is known to be a well-formed string. The
 * X-RateLimit-* headers stay those of the general limit; a refusal is the same for known and
 * unknown addresses.
 */
export function authLimits(services: Services): RequestHandler {
  const { config } = services;
  const limiter = (keyPrefix: string, points: number) =>
    new RateLimiterPostgres({
      storeClient: unnamedStatements(services.db.pool),
      storeType: "pool",
      tableName: "rate_limits",
      tableCreated: true,
      clearExpiredByTimeout: false,
      keyPrefix,
      points,
      duration: WINDOW_S,
    });
  const perIp = limiter("auth-ip", config.authAttemptsPerIp);
  const perEmail = limiter("auth-email", config.authAttemptsPerEmail);

  return async (req, _res, next) => {
    const operationId = operationIdOf(req);
    const rule = operationId && LIMITED.get(operationId);
    if (!rule || (rule.counts && !rule.counts(req))) return next();
    const account = rule.account?.(req);
    // Both counts are taken on every call, so a refusal by one still counts against the other.
    const outcomes = await Promise.allSettled([
      perIp.consume(clientAddressKey(req)),
      ...(account === undefined ? [] : [perEmail.consume(sha256(account))]),
    ]);
    let waitMs = 0;
    for (const outcome of outcomes) {
      if (outcome.status === "fulfilled") continue;
      if (!(outcome.reason instanceof RateLimiterRes)) return next(outcome.reason);
      waitMs = Math.max(waitMs, outcome.reason.msBeforeNext);
    }
    if (!waitMs) return next();
    const retryAfter = Math.max(1, Math.ceil(waitMs / 1000));
    next(
      rateLimited(`Too many attempts; retry in ${retryAfter} s`, retryAfter),
    );
  };
}
