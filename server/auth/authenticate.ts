import type { Request, RequestHandler } from "express";
import { operationsById } from "../contract.ts";
import { ApiError } from "../http/errors.ts";
import { setPrincipal } from "../http/principal.ts";
import { operationIdOf } from "../http/router.ts";
import type { Services } from "../services.ts";
import { allows } from "./scopes.ts";
import { resolveCredential, type Credential } from "./service.ts";

/**
 * Resolves the credential of an operation that needs one (session JWT, OAuth access token or API
 * key, in `Authorization: Bearer` or `X-API-Key`) to the request's principal through the auth
 * service, which checks it against the database on every request so that a revoked key, a revoked
 * session or a deleted account fails at once. Then enforces the operation's scope (403).
 */
export function authenticate(services: Services): RequestHandler {
  return async (req, _res, next) => {
    const operationId = operationIdOf(req);
    const op = operationId ? operationsById.get(operationId) : undefined;
    if (!op?.scope) return next();
    try {
      const credential = credentialOf(req);
      const principal = credential && (await resolveCredential(services, credential));
      if (!principal) return next(new ApiError(401, "unauthorized", "Credentials are missing, invalid, expired or revoked"));
      if (!allows(principal, op)) {
        return next(new ApiError(403, "forbidden", `This credential lacks the "${op.scope}" scope this operation needs`));
      }
      setPrincipal(req, principal);
      next();
    } catch (error) {
      next(error);
    }
  };
}

function credentialOf(req: Request): Credential | undefined {
  const header = req.get("authorization");
  const bearer = header && /^Bearer\s+(\S+)$/i.exec(header)?.[1];
  const apiKey = req.get("x-api-key") ?? (bearer?.startsWith("pk_") ? bearer : undefined);
  if (apiKey) return { kind: "api_key", key: apiKey };
  if (bearer) return { kind: "access_token", token: bearer };
  return undefined;
}
