import type { Request, RequestHandler } from "express";
import { allows, type Principal } from "../auth/principal.ts";
import { findActiveSession, findApiKeyByHash, touchApiKey } from "../auth/store.ts";
import { sha256 } from "../auth/tokens.ts";
import { operationsById } from "../contract.ts";
import type { Services } from "../services.ts";
import { ApiError } from "./errors.ts";
import { operationIdOf } from "./router.ts";

// last_used_at is written at most once a minute per key, not on every request. The row is read on
// every request anyway, so its own last_used_at decides: no per-process memory that grows with keys.
const TOUCH_EVERY_MS = 60_000;

const unauthorized = (message = "Credentials are missing, invalid, expired or revoked") => new ApiError(401, "unauthorized", message);

/**
 * Resolves the credential of an operation that needs one (session JWT, OAuth access token or API
 * key, in `Authorization: Bearer` or `X-API-Key`) to `req.principal`, checked against the database
 * on every request so that a revoked key, a revoked session or a deleted account fails at once.
 * Then enforces the operation's scope (403).
 */
export function authenticate(services: Services): RequestHandler {
  return async (req, _res, next) => {
    const operationId = operationIdOf(req);
    const op = operationId ? operationsById.get(operationId) : undefined;
    if (!op?.scope) return next();
    try {
      const principal = await resolve(req);
      if (!principal) return next(unauthorized());
      if (!allows(principal, op)) {
        return next(new ApiError(403, "forbidden", `This credential lacks the "${op.scope}" scope this operation needs`));
      }
      (req as Request & { principal: Principal }).principal = principal;
      next();
    } catch (error) {
      next(error);
    }
  };

  async function resolve(req: Request): Promise<Principal | undefined> {
    const header = req.get("authorization");
    const bearer = header && /^Bearer\s+(\S+)$/i.exec(header)?.[1];
    const apiKey = req.get("x-api-key") ?? (bearer?.startsWith("pk_") ? bearer : undefined);
    if (apiKey) return resolveApiKey(apiKey);
    if (bearer) return resolveAccessToken(bearer);
    return undefined;
  }

  async function resolveApiKey(key: string): Promise<Principal | undefined> {
    const now = services.now();
    const row = await findApiKeyByHash(services.db.knex, sha256(key));
    if (!row || row.revoked_at || row.user_deleted_at || (row.expires_at && row.expires_at <= now)) return undefined;
    const last = row.last_used_at?.getTime() ?? 0;
    if (now.getTime() - last >= TOUCH_EVERY_MS) {
      await touchApiKey(services.db.knex, row.id, now);
    }
    return { userId: row.user_id, kind: "api_key", scopes: new Set(row.scopes), apiKeyId: row.id };
  }

  async function resolveAccessToken(token: string): Promise<Principal | undefined> {
    const claims = await services.tokens.verify(token, services.now());
    if (!claims) return undefined;
    if (!(await findActiveSession(services.db.knex, claims.sub, claims.sid))) return undefined;
    if (claims.cid) {
      return { userId: claims.sub, kind: "oauth", scopes: new Set((claims.scope ?? "").split(" ").filter(Boolean)), sessionId: claims.sid, clientId: claims.cid };
    }
    return { userId: claims.sub, kind: "session", scopes: "all", sessionId: claims.sid };
  }
}

/** The principal the auth middleware resolved; only call from operations that need credentials. */
export function principalOf(req: Request): Principal {
  const principal = (req as Request & { principal?: Principal }).principal;
  if (!principal) throw unauthorized();
  return principal;
}
