import { createHash, createHmac } from "node:crypto";
import type { Services } from "../../../toolkit/services.ts";
import { invalidField, invalidRequest } from "../../../toolkit/http/error-catalogue.ts";
import { instanceSecret } from "../../../toolkit/db/instance-secrets.ts";
import { refreshSession, revokeSession, startSession, type IssuedTokens } from "../sessions/service.ts";
import { isLiveUser } from "../users/service.ts";
import { constantTimeEqual, randomToken, sha256 } from "../../../toolkit/tokens.ts";
import { attachSession, consumeCode, deleteCodesExpiredBefore, findCode, insertCode, markReused } from "./store.ts";

export const CODE_TTL_MS = 10 * 60 * 1000;
// How long the consent page may stay open before its form is refused.
export const CSRF_TTL_MS = 60 * 60 * 1000;

/** The fine-grained vocabulary (spec/auth.tsp ApiKeyScope), in the words the consent page shows. */
export const SCOPE_WORDS: Record<string, string> = {
  "personas:read": "See your personas, their knowledge documents and studio data",
  "personas:write": "Create, change and delete your personas",
  "conversations:read": "Read your conversations and rooms",
  "conversations:write": "Start conversations and send messages for you",
  voice: "Use text-to-speech and speech-to-text for you",
  admin: "Full access to your account, including its settings, API keys and billing",
};

const badRequest = (message: string, path?: string) => (path ? invalidField(path, message, message) : invalidRequest(message));

/** Space-separated scopes, deduplicated in request order; an unknown one is a 400. */
export function parseScopes(scope: string): string[] {
  const scopes = [...new Set(scope.split(" ").filter(Boolean))];
  if (!scopes.length) throw badRequest("scope names no scope", "scope");
  const unknown = scopes.filter((s) => !Object.hasOwn(SCOPE_WORDS, s));
  if (unknown.length) throw badRequest(`Unknown scope: ${unknown.join(", ")}`, "scope");
  return scopes;
}

/** RFC 7636: S256 only; a challenge without a method would mean `plain`, which is refused. */
export function checkChallenge(challenge: string | undefined, method: string | undefined): void {
  if (challenge && method !== "S256") throw badRequest("code_challenge_method must be S256", "code_challenge_method");
  if (!challenge && method) throw badRequest("code_challenge_method was sent without a code_challenge", "code_challenge");
}

/** What the consent page carries and the CSRF token binds. */
export interface AuthorizeRequest {
  client_id: string;
  redirect_uri: string;
  scope: string;
  state: string;
  code_challenge?: string | undefined;
  code_challenge_method?: string | undefined;
}

function csrfMac(secret: string, request: AuthorizeRequest, issuedAt: number): string {
  const fields = [
    request.client_id,
    request.redirect_uri,
    request.scope,
    request.state,
    request.code_challenge ?? "",
    request.code_challenge_method ?? "",
    String(issuedAt),
  ];
  // JSON keeps the fields apart whatever characters they hold.
  return createHmac("sha256", secret).update(JSON.stringify(fields)).digest("base64url");
}

const csrfSecret = (services: Services) => instanceSecret(services.db.knex, "oauth_csrf", undefined);

/**
 * A token that binds the form to the page the server rendered: an HMAC of every hidden field and
 * the time, under a secret of this installation. No server state, so any replica can check it.
 */
export async function csrfToken(services: Services, request: AuthorizeRequest): Promise<string> {
  const issuedAt = services.now().getTime();
  return `${issuedAt}.${csrfMac(await csrfSecret(services), request, issuedAt)}`;
}

export async function checkCsrfToken(services: Services, request: AuthorizeRequest, token: string): Promise<void> {
  const refused = badRequest("The form's csrf_token is invalid or expired: reload the authorization page", "csrf_token");
  const match = /^(\d{1,16})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!match) throw refused;
  const issuedAt = Number(match[1]);
  const age = services.now().getTime() - issuedAt;
  if (age < -60_000 || age > CSRF_TTL_MS) throw refused;
  if (!constantTimeEqual(match[2]!, csrfMac(await csrfSecret(services), request, issuedAt))) throw refused;
}

/** A single-use code for the approved request; only its hash is stored. */
export async function issueCode(
  services: Services,
  grant: { clientId: string; userId: string; redirectUri: string; scopes: string[]; codeChallenge: string | undefined },
): Promise<string> {
  const now = services.now();
  const code = randomToken();
  await insertCode(services.db.knex, {
    code_hash: sha256(code),
    client_id: grant.clientId,
    user_id: grant.userId,
    redirect_uri: grant.redirectUri,
    scopes: grant.scopes,
    code_challenge: grant.codeChallenge ?? null,
    created_at: now,
    expires_at: new Date(now.getTime() + CODE_TTL_MS),
  });
  return code;
}

export type OAuthTokens = IssuedTokens & { scope: string };

const s256 = (verifier: string) => createHash("sha256").update(verifier).digest("base64url");

/**
 * Exchanges a code from an authenticated client. The code is single-use: presenting it again
 * revokes the session the first exchange started (RFC 6749 4.1.2), so a stolen code that raced
 * the real client leaves neither with working tokens.
 */
export async function exchangeCode(
  services: Services,
  clientId: string,
  input: { code: string; redirectUri: string; codeVerifier: string | undefined },
): Promise<OAuthTokens> {
  const { knex } = services.db;
  const now = services.now();
  const hash = sha256(input.code);
  const invalid = badRequest("The authorization code is invalid, expired or already used", "code");
  const row = await findCode(knex, hash);
  if (!row || row.client_id !== clientId) throw invalid;
  if (row.used_at) return replayed(services, hash);
  if (row.expires_at <= now) throw invalid;
  if (row.redirect_uri !== input.redirectUri) throw badRequest("redirect_uri does not match the authorization request", "redirect_uri");
  if (row.code_challenge) {
    if (!input.codeVerifier) throw badRequest("code_verifier is required: the authorization request sent a code_challenge", "code_verifier");
    if (!constantTimeEqual(s256(input.codeVerifier), row.code_challenge)) throw badRequest("code_verifier does not match the code_challenge", "code_verifier");
  }
  if (!(await isLiveUser(services, row.user_id))) throw invalid;
  if (!(await consumeCode(knex, hash, now))) return replayed(services, hash);

  const { sessionId, ...tokens } = await startSession(services, row.user_id, { clientId, scopes: row.scopes });
  if ((await attachSession(knex, hash, sessionId)).reused) {
    await revokeSession(services, sessionId);
    throw invalid;
  }
  return { ...tokens, scope: row.scopes.join(" ") };
}

async function replayed(services: Services, codeHash: string): Promise<never> {
  const sessionId = await markReused(services.db.knex, codeHash, services.now());
  if (sessionId) {
    await revokeSession(services, sessionId);
    services.log.warn({ sessionId }, "authorization code reused: its session revoked");
  }
  throw badRequest("The authorization code is invalid, expired or already used", "code");
}

/** A refresh for an authenticated client: only tokens of that client's grants are accepted. */
export async function refreshForClient(services: Services, clientId: string, refreshToken: string): Promise<OAuthTokens> {
  const tokens = await refreshSession(services, refreshToken, clientId);
  // The grant's scopes ride in the fresh access token; reading them back needs no query.
  const claims = await services.tokens.verify(tokens.access_token, services.now());
  return { ...tokens, scope: claims?.scope ?? "" };
}

/**
 * Removes authorization codes a day after they expired: long enough that a late replay of a used
 * code is still seen as a reuse (and revokes what it issued), short enough that the table stays small.
 */
export async function purgeExpiredCodes(services: Services): Promise<number> {
  return deleteCodesExpiredBefore(services.db.knex, new Date(services.now().getTime() - 24 * 60 * 60 * 1000));
}
