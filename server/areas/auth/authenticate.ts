import type { Request, RequestHandler } from "express";
import { operationsById } from "../../toolkit/contract.ts";
import { missingScope, unauthorized } from "../../toolkit/http/error-catalogue.ts";
import { suspendedRefusal } from "./users/suspension.ts";
import { callerOf, setPrincipal, type Principal } from "../../toolkit/http/principal.ts";
import { operationIdOf } from "../../toolkit/http/router.ts";
import type { Services } from "../../toolkit/services.ts";
import { touchApiKeyUse } from "./api-keys/service.ts";
import { credentialCache, type CredentialCache } from "./credential-cache.ts";
import { allows, missingScopeRefusal } from "./scopes.ts";
import { resolveCredential, type Credential } from "./service.ts";
import { sha256 } from "../../toolkit/tokens.ts";

/**
 * Resolves the credential a request carries (session JWT, OAuth access token or API key, in
 * `Authorization: Bearer` or `X-API-Key`) to the request's principal, on every operation, before
 * anything reads its body (issue 31: the caller is known before the service spends anything on the
 * request); `requireCredential` then enforces it where the operation needs one. An invalid
 * credential leaves the request without a principal, so the rate limit between the two stages
 * counts it against the client's address, never against the string it sent (issue 31 M1).
 * A credential seen recently comes from this process's credential cache (no round trip, no
 * signature check); revocations reach the cache before the revoking request answers, and other
 * processes through database notifications (credential-cache.ts).
 */
export function identifyCaller(services: Services): RequestHandler {
  const cache = credentialCache(services);
  return async (req, _res, next) => {
    const credential = credentialOf(req);
    if (!credential) return next();
    try {
      const principal = await principalFor(services, cache, credential);
      if (principal) setPrincipal(req, principal);
      next();
    } catch (error) {
      next(error);
    }
  };
}

/**
 * 401 for an operation that needs a credential and has no valid one; 403 when its scope is missing,
 * naming the scope and what grants it in each key vocabulary, or the account is suspended.
 */
export const requireCredential: RequestHandler = (req, _res, next) => {
  const operationId = operationIdOf(req);
  const op = operationId ? operationsById.get(operationId) : undefined;
  if (!op?.scope) return next();
  const principal = callerOf(req);
  if (!principal) return next(unauthorized("Credentials are missing, invalid, expired or revoked"));
  if (principal.suspended) return next(suspendedRefusal(principal.suspended));
  if (!allows(principal, op)) {
    const { message, granting } = missingScopeRefusal({ ...op, scope: op.scope });
    return next(missingScope(message, op.scope, granting));
  }
  next();
};

// An API key's last_used_at is written at most this often (the database lookup writes it too).
const TOUCH_EVERY_MS = 60_000;

async function principalFor(services: Services, cache: CredentialCache, credential: Credential): Promise<Principal | undefined> {
  const key = credential.kind === "api_key" ? `k:${sha256(credential.key)}` : `t:${credential.token}`;
  const now = services.now().getTime();
  const cached = cache.lookup(key, now);
  if (cached) {
    const { principal } = cached;
    if (principal.apiKeyId && now - cached.touchedAt >= TOUCH_EVERY_MS) {
      cached.touchedAt = now;
      await touchApiKeyUse(services, principal.apiKeyId, new Date(now));
    }
    return principal;
  }
  const epoch = cache.begin();
  const resolved = await resolveCredential(services, credential);
  if (!resolved) return undefined;
  const claims = credential.kind === "access_token" ? tokenClaims(credential.token) : undefined;
  // A token's issue time tells read routing that its sign-in (or sign-up) was a write of the caller's.
  const principal = claims?.issuedAt ? { ...resolved, issuedAt: claims.issuedAt } : resolved;
  const validUntil = principal.expiresAt ?? (claims ? claims.expiresAt : Infinity);
  cache.store(key, { principal, validUntil, cachedAt: now, touchedAt: now }, epoch);
  return principal;
}

/** `exp` and `iat` of a JWT that was just verified, in epoch ms (0 and undefined when absent). */
function tokenClaims(token: string): { expiresAt: number; issuedAt: number | undefined } {
  try {
    const { exp, iat } = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString("utf8")) as { exp?: unknown; iat?: unknown };
    return { expiresAt: typeof exp === "number" ? exp * 1000 : 0, issuedAt: typeof iat === "number" ? iat * 1000 : undefined };
  } catch {
    return { expiresAt: 0, issuedAt: undefined };
  }
}

function credentialOf(req: Request): Credential | undefined {
  const header = req.get("authorization");
  const bearer = header && /^Bearer\s+(\S+)$/i.exec(header)?.[1];
  const apiKey = req.get("x-api-key") ?? (bearer?.startsWith("pk_") ? bearer : undefined);
  if (apiKey) return { kind: "api_key", key: apiKey };
  if (bearer) return { kind: "access_token", token: bearer };
  return undefined;
}
