import type { Knex } from "knex";
import { v7 as uuidv7 } from "uuid";
import { invalidFields, notFound } from "../../../toolkit/http/error-catalogue.ts";
import type { Principal } from "../../../toolkit/http/principal.ts";
import { isUuid } from "../../../toolkit/http/text.ts";
import type { Services } from "../../../toolkit/services.ts";
import { revokedCredentials } from "../credential-cache.ts";
import { SCOPE_VOCABULARIES } from "../scopes.ts";
import { newApiKey, sha256 } from "../../../toolkit/tokens.ts";
import { suspensionOf } from "../users/suspension.ts";
import {
  findApiKeyByHash,
  grantOfApiKey,
  insertApiKey,
  listLiveApiKeys,
  restoreApiKeysRevokedWithAccount,
  revokeGrantApiKeys as revokeGrantKeyRows,
  revokeLiveApiKey,
  revokeUserApiKeys as revokeUserKeyRows,
  touchApiKey,
  type ApiKeyRow,
} from "./store.ts";

const DAY_MS = 24 * 60 * 60 * 1000;
const TOUCH_EVERY_MS = 60_000;
export const NAME_MAX = 100;
export const EXPIRES_IN_DAYS_MAX = 3650;

// The two creation forms and their scope vocabularies (interface spec, Authentication). Keys of
// either form are listed, used and revoked the same way; scopes.ts maps both onto operations.
export const FINE_SCOPES: ReadonlySet<string> = new Set(SCOPE_VOCABULARIES[0].scopes);
export const SIMPLE_SCOPES: ReadonlySet<string> = new Set(SCOPE_VOCABULARIES[1].scopes);

export interface NewKeyInput {
  name: string;
  scopes: string[];
  expires_in_days?: number;
}

/**
 * The contract validator already enforces these limits; they are checked again here so that the
 * rules hold for any caller of `createApiKey` and nothing is written for a bad request.
 */
function checkInput(input: NewKeyInput, vocabulary: ReadonlySet<string>): void {
  const errors: { path: string; message: string }[] = [];
  const nameLength = typeof input.name === "string" ? [...input.name].length : 0;
  if (nameLength < 1 || nameLength > NAME_MAX) errors.push({ path: "/body/name", message: `must be 1 to ${NAME_MAX} characters` });
  if (!Array.isArray(input.scopes) || input.scopes.length === 0) {
    errors.push({ path: "/body/scopes", message: "must name at least one scope" });
  } else {
    input.scopes.forEach((scope, i) => {
      if (!vocabulary.has(scope)) errors.push({ path: `/body/scopes/${i}`, message: `must be one of: ${[...vocabulary].join(", ")}` });
    });
    if (new Set(input.scopes).size !== input.scopes.length) errors.push({ path: "/body/scopes", message: "must not repeat a scope" });
  }
  const days = input.expires_in_days;
  if (days !== undefined && (!Number.isInteger(days) || days < 1 || days > EXPIRES_IN_DAYS_MAX)) {
    errors.push({ path: "/body/expires_in_days", message: `must be a whole number from 1 to ${EXPIRES_IN_DAYS_MAX}` });
  }
  if (errors.length > 0) {
    throw invalidFields(errors.map((e) => `${e.path} ${e.message}`).join("; "), errors);
  }
}

/**
 * The OAuth grant a new key is minted through, which it must not outlive (issue 31 I2): the
 * caller's own when it is an OAuth app, the one its key was minted through when it is a key, none
 * for the user's own login.
 */
async function mintingGrant(services: Services, caller: Principal): Promise<string | null> {
  if (caller.kind === "oauth") return caller.sessionId ?? null;
  if (caller.kind === "api_key" && caller.apiKeyId) return grantOfApiKey(services.db.knex, caller.apiKeyId);
  return null;
}

/** Creates a key for the caller's user; the full key is returned here and nowhere else (only its hash is kept). */
export async function createApiKey(
  services: Services,
  caller: Principal,
  input: NewKeyInput,
  vocabulary: ReadonlySet<string>,
): Promise<{ row: ApiKeyRow; key: string }> {
  checkInput(input, vocabulary);
  const now = services.now();
  const { key, hint } = newApiKey();
  const row = await insertApiKey(services.db.knex, {
    id: uuidv7(),
    user_id: caller.userId,
    grant_session_id: await mintingGrant(services, caller),
    name: input.name,
    key_hash: sha256(key),
    key_hint: hint,
    scopes: input.scopes,
    created_at: now,
    expires_at: input.expires_in_days === undefined ? null : new Date(now.getTime() + input.expires_in_days * DAY_MS),
  });
  return { row, key };
}

/** The user's live keys: revoked and expired keys no longer exist for their owner. */
export async function listApiKeys(services: Services, userId: string): Promise<ApiKeyRow[]> {
  return listLiveApiKeys(services.db.knex, userId, services.now());
}

/** Another user's key, an unknown id and an already revoked or expired key are all 404. */
export async function revokeApiKey(services: Services, userId: string, id: string): Promise<ApiKeyRow & { revoked_at: Date }> {
  const row = isUuid(id) ? await revokeLiveApiKey(services.db.knex, userId, id, services.now()) : undefined;
  if (!row?.revoked_at) throw notFound("API key");
  await revokedCredentials(services, { apiKeyId: row.id });
  return row as ApiKeyRow & { revoked_at: Date };
}

/**
 * Revokes every key of the user (account deletion, password reset), inside the caller's
 * transaction; answers how many were live. The caller tells the credential cache (by user) once
 * the transaction is committed. `withAccount`: the account's deletion, which a restore undoes.
 */
export async function revokeUserApiKeys(db: Knex, userId: string, now: Date, options: { withAccount?: boolean } = {}): Promise<number> {
  return revokeUserKeyRows(db, userId, now, options.withAccount ?? false);
}

/**
 * A restored account's keys: those its deletion revoked are live again, inside the caller's
 * transaction, except keys minted through an OAuth grant (ADR 0093); answers how many are live.
 */
export async function restoreUserApiKeys(db: Knex, userId: string, now: Date): Promise<number> {
  return restoreApiKeysRevokedWithAccount(db, userId, now);
}

/**
 * Revokes the keys minted through an OAuth grant that was just revoked (issue 31 I2), inside the
 * caller's transaction; answers their ids, for the credential cache once it is committed.
 */
export async function revokeGrantApiKeys(db: Knex, sessionId: string, now: Date): Promise<string[]> {
  return revokeGrantKeyRows(db, sessionId, now);
}

/**
 * The caller behind an API key, checked against the database on every request so that a revoked
 * key or a deleted account fails at once. last_used_at is written at most once a minute per key:
 * the row is read on every request anyway, so its own last_used_at decides, and no per-process
 * memory grows with the number of keys.
 */
export async function resolveApiKey(services: Services, key: string): Promise<Principal | undefined> {
  const now = services.now();
  const row = await findApiKeyByHash(services.db.knex, sha256(key));
  if (!row || row.revoked_at || row.user_deleted_at || (row.expires_at && row.expires_at <= now)) return undefined;
  const last = row.last_used_at?.getTime() ?? 0;
  if (now.getTime() - last >= TOUCH_EVERY_MS) {
    await touchApiKey(services.db.knex, row.id, now);
  }
  const suspended = suspensionOf(row.user_suspended_at, row.user_suspension_reason);
  return {
    userId: row.user_id,
    kind: "api_key",
    scopes: new Set(row.scopes),
    apiKeyId: row.id,
    ...(row.expires_at ? { expiresAt: row.expires_at.getTime() } : {}),
    ...(suspended ? { suspended } : {}),
  };
}

/** Writes a key's last_used_at (the credential cache calls it at most once a minute per key). */
export async function touchApiKeyUse(services: Services, id: string, now: Date): Promise<void> {
  await touchApiKey(services.db.knex, id, now);
}
