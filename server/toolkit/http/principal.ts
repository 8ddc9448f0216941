import type { Request } from "express";
import { unauthorized } from "./error-catalogue.ts";

/**
 * Who is calling, with what it may do. The pipeline only carries it: the auth area resolves it from
 * a credential and records it with `setPrincipal`; handlers read it as `ctx.principal`.
 */
export interface Principal {
  userId: string;
  kind: "session" | "api_key" | "oauth";
  /** `all` for a user's own session token; otherwise the scopes of the key or OAuth grant. */
  scopes: "all" | ReadonlySet<string>;
  sessionId?: string;
  apiKeyId?: string;
  clientId?: string;
  /** When the credential itself expires (epoch ms), if it does; the credential cache keeps it no longer. */
  expiresAt?: number;
  /** Set when the account is suspended (issue 41): every operation that needs a credential refuses it. */
  suspended?: { at: string; reason: string | null };
  /** When the credential was issued (epoch ms), when it says (a token of a sign-up, sign-in or refresh). */
  issuedAt?: number;
}

// Kept as `req.principal`, which client-identity.ts also reads to key the rate limit by user.
type WithPrincipal = Request & { principal?: Principal };

/** Records the caller of this request (the credential middleware does, once it has checked it). */
export function setPrincipal(req: Request, principal: Principal): void {
  (req as WithPrincipal).principal = principal;
}

/** The caller of this request, if a valid credential named one. */
export function callerOf(req: Request): Principal | undefined {
  return (req as WithPrincipal).principal;
}

/** The caller of this request; 401 when none was resolved, so a handler can never act for nobody. */
export function principalOf(req: Request): Principal {
  const principal = (req as WithPrincipal).principal;
  if (!principal) throw unauthorized("Credentials are missing, invalid, expired or revoked");
  return principal;
}
