import type { Knex } from "knex";
import { v7 as uuidv7 } from "uuid";
import { unauthorized } from "../../../toolkit/http/error-catalogue.ts";
import type { Principal } from "../../../toolkit/http/principal.ts";
import type { Services } from "../../../toolkit/services.ts";
import { revokeGrantApiKeys } from "../api-keys/service.ts";
import { revokedCredentials } from "../credential-cache.ts";
import { ACCESS_TOKEN_TTL_S, REFRESH_TOKEN_TTL_MS, randomToken, sha256 } from "../../../toolkit/tokens.ts";
import { checkAnyCredentials, pendingDeletionRefusal, type UserRow } from "../users/service.ts";
import { suspensionOf, suspendedRefusal } from "../users/suspension.ts";
import {
  consumeRefreshToken,
  findActiveSession,
  findRefreshToken,
  findSessionStart,
  insertRefreshToken,
  insertSession,
  revokeSession as revokeSessionRow,
  revokeUserSessions as revokeUserSessionRows,
} from "./store.ts";

export interface IssuedTokens {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  refresh_token: string;
}

/**
 * Starts a session (a login, or an OAuth grant) and issues its first token pair. `db` lets a caller
 * make it part of a larger transaction (registration: no account without its session).
 */
export async function startSession(
  services: Services,
  userId: string,
  grant: { clientId?: string; scopes?: string[] } = {},
  db: Knex = services.db.knex,
): Promise<IssuedTokens & { sessionId: string }> {
  const now = services.now();
  const sessionId = uuidv7();
  await insertSession(db, {
    id: sessionId,
    user_id: userId,
    client_id: grant.clientId ?? null,
    scopes: grant.scopes ?? null,
    created_at: now,
  });
  return { ...(await issuePair(services, userId, sessionId, grant, db)), sessionId };
}

/**
 * A login: the user and a new session, or 401 (the same for an unknown e-mail and a wrong password).
 * The right password of an account scheduled for deletion is told so (403 `account_pending_deletion`),
 * with how to restore it; a wrong one learns nothing more than for any account.
 */
export async function login(services: Services, email: string, password: string): Promise<{ user: UserRow; tokens: IssuedTokens }> {
  const user = await checkAnyCredentials(services, email, password);
  if (!user) throw unauthorized("The e-mail or password is wrong");
  if (user.deleted_at) throw pendingDeletionRefusal(user.deleted_at, services.now());
  const suspended = suspensionOf(user.suspended_at, user.suspension_reason);
  if (suspended) throw suspendedRefusal(suspended);
  const { sessionId: _, ...tokens } = await startSession(services, user.id);
  return { user, tokens };
}

/** When the user's own login (not an OAuth grant) `sessionId` started, if it is live. */
export async function loginStartedAt(services: Services, userId: string, sessionId: string): Promise<Date | undefined> {
  return findSessionStart(services.db.knex, userId, sessionId);
}

/**
 * Exchanges a refresh token for a new pair. The token is single-use: of two concurrent refreshes
 * exactly one succeeds, and presenting a used token again revokes its whole session (every token
 * of that login), because only a thief or a replay would do that.
 */
export async function refreshSession(services: Services, refreshToken: string, clientId?: string): Promise<IssuedTokens> {
  const { knex } = services.db;
  const now = services.now();
  const hash = sha256(refreshToken);
  const found = await findRefreshToken(knex, hash);
  const invalid = unauthorized("The refresh token is invalid, expired or already used");
  if (!found || found.session_revoked_at || found.user_deleted_at || found.expires_at <= now) throw invalid;
  if ((found.client_id ?? undefined) !== clientId) throw invalid;
  // A suspended account's session is not refreshed (issue 41): 401, whose message says why (the
  // refresh operations declare no 403; signing in and every other credential answer 403 account_suspended).
  const suspended = suspensionOf(found.user_suspended_at, found.user_suspension_reason);
  if (suspended) throw unauthorized(suspendedRefusal(suspended).message);
  if (found.used_at || !(await consumeRefreshToken(knex, hash, now))) {
    await revokeSession(services, found.session_id);
    services.log.warn({ sessionId: found.session_id }, "refresh token reused: session revoked");
    throw invalid;
  }
  return issuePair(services, found.user_id, found.session_id, {
    ...(found.client_id ? { clientId: found.client_id } : {}),
    ...(found.scopes ? { scopes: found.scopes } : {}),
  });
}

async function issuePair(
  services: Services,
  userId: string,
  sessionId: string,
  grant: { clientId?: string; scopes?: string[] },
  db: Knex = services.db.knex,
): Promise<IssuedTokens> {
  const now = services.now();
  const refresh = randomToken();
  await insertRefreshToken(db, {
    token_hash: sha256(refresh),
    session_id: sessionId,
    created_at: now,
    expires_at: new Date(now.getTime() + REFRESH_TOKEN_TTL_MS),
  });
  const access = await services.tokens.sign(
    { sub: userId, sid: sessionId, ...(grant.clientId ? { cid: grant.clientId, scope: (grant.scopes ?? []).join(" ") } : {}) },
    now,
  );
  return { access_token: access, token_type: "Bearer", expires_in: ACCESS_TOKEN_TTL_S, refresh_token: refresh };
}

/**
 * Ends one session: its refresh tokens stop working, and its access tokens fail their session check.
 * An OAuth grant takes the API keys minted through it along (issue 31 I2).
 */
export async function revokeSession(services: Services, sessionId: string): Promise<void> {
  const now = services.now();
  const keyIds = await services.db.knex.transaction(async (trx) => {
    await revokeSessionRow(trx, sessionId, now);
    return revokeGrantApiKeys(trx, sessionId, now);
  });
  await revokedCredentials(services, { sessionId });
  for (const apiKeyId of keyIds) await revokedCredentials(services, { apiKeyId });
}

/**
 * Ends every session of the user (password reset, account deletion), inside the caller's
 * transaction; answers how many were the user's logins and how many OAuth grants.
 */
export async function revokeUserSessions(db: Knex, userId: string, now: Date): Promise<{ logins: number; grants: number }> {
  return revokeUserSessionRows(db, userId, now);
}

/**
 * The caller behind a session JWT or OAuth access token, checked against the database on every
 * request so that a revoked session or a deleted account fails at once.
 */
export async function resolveAccessToken(services: Services, token: string): Promise<Principal | undefined> {
  const claims = await services.tokens.verify(token, services.now());
  if (!claims) return undefined;
  const session = await findActiveSession(services.db.knex, claims.sub, claims.sid);
  if (!session) return undefined;
  const suspended = suspensionOf(session.suspended_at, session.suspension_reason);
  const flag = suspended ? { suspended } : {};
  if (claims.cid) {
    return { userId: claims.sub, kind: "oauth", scopes: new Set((claims.scope ?? "").split(" ").filter(Boolean)), sessionId: claims.sid, clientId: claims.cid, ...flag };
  }
  return { userId: claims.sub, kind: "session", scopes: "all", sessionId: claims.sid, ...flag };
}
