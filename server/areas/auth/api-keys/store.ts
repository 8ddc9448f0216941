import type { Knex } from "knex";

/** A key as stored, without its hash; the hash never leaves the store. */
export interface ApiKeyRow {
  id: string;
  user_id: string;
  name: string;
  key_hint: string;
  scopes: string[];
  created_at: Date;
  last_used_at: Date | null;
  expires_at: Date | null;
  revoked_at: Date | null;
}

const COLUMNS = ["id", "user_id", "name", "key_hint", "scopes", "created_at", "last_used_at", "expires_at", "revoked_at"] as const;

export async function insertApiKey(
  knex: Knex,
  key: {
    id: string;
    user_id: string;
    name: string;
    key_hash: string;
    key_hint: string;
    scopes: string[];
    created_at: Date;
    expires_at: Date | null;
    grant_session_id: string | null;
  },
): Promise<ApiKeyRow> {
  const [row] = await knex("api_keys").insert(key).returning([...COLUMNS]);
  return row as ApiKeyRow;
}

/** The user's live keys (not revoked, not expired at `now`), newest first. */
export async function listLiveApiKeys(knex: Knex, userId: string, now: Date): Promise<ApiKeyRow[]> {
  return knex("api_keys")
    .select([...COLUMNS])
    .where({ user_id: userId })
    .whereNull("revoked_at")
    .where((q) => q.whereNull("expires_at").orWhere("expires_at", ">", now))
    .orderBy([{ column: "created_at", order: "desc" }, { column: "id", order: "desc" }]);
}

/**
 * Revokes one of the user's live keys in a single statement, so two concurrent revocations cannot
 * both succeed; undefined when there is no such live key of this user.
 */
export async function revokeLiveApiKey(knex: Knex, userId: string, id: string, now: Date): Promise<ApiKeyRow | undefined> {
  const [row] = await knex("api_keys")
    .where({ id, user_id: userId })
    .whereNull("revoked_at")
    .where((q) => q.whereNull("expires_at").orWhere("expires_at", ">", now))
    .update({ revoked_at: now })
    .returning([...COLUMNS]);
  return row as ApiKeyRow | undefined;
}

/**
 * Revokes every key of the user; answers how many of them were live (not expired). `withAccount`:
 * the account's deletion revokes them, and its restore may bring exactly these back.
 */
export async function revokeUserApiKeys(knex: Knex, userId: string, now: Date, withAccount = false): Promise<number> {
  const rows: { expires_at: Date | null }[] = await knex("api_keys")
    .where({ user_id: userId })
    .whereNull("revoked_at")
    .update({ revoked_at: now, revoked_with_account: withAccount })
    .returning("expires_at");
  return rows.filter((row) => !row.expires_at || row.expires_at > now).length;
}

/**
 * Brings back the user's keys that the account's deletion revoked, except those minted through an
 * OAuth grant (the grant stays revoked, and its keys die with it); answers how many are live again
 * (not expired). Every key loses the mark, so a later restore cannot bring back a key revoked since.
 */
export async function restoreApiKeysRevokedWithAccount(knex: Knex, userId: string, now: Date): Promise<number> {
  const rows: { expires_at: Date | null }[] = await knex("api_keys")
    .where({ user_id: userId, revoked_with_account: true })
    .whereNull("grant_session_id")
    .update({ revoked_at: null, revoked_with_account: false })
    .returning("expires_at");
  await knex("api_keys").where({ user_id: userId, revoked_with_account: true }).update({ revoked_with_account: false });
  return rows.filter((row) => !row.expires_at || row.expires_at > now).length;
}

/** The OAuth grant (session id) a key was minted through, if any. */
export async function grantOfApiKey(knex: Knex, id: string): Promise<string | null> {
  const row = await knex("api_keys").where({ id }).first<{ grant_session_id: string | null } | undefined>("grant_session_id");
  return row?.grant_session_id ?? null;
}

/** Revokes the keys minted through a grant; answers their ids. */
export async function revokeGrantApiKeys(knex: Knex, sessionId: string, now: Date): Promise<string[]> {
  const rows: { id: string }[] = await knex("api_keys").where({ grant_session_id: sessionId }).whereNull("revoked_at").update({ revoked_at: now }).returning("id");
  return rows.map((row) => row.id);
}

export async function findApiKeyByHash(
  knex: Knex,
  keyHash: string,
): Promise<(ApiKeyRow & { user_deleted_at: Date | null; user_suspended_at: Date | null; user_suspension_reason: string | null }) | undefined> {
  return knex("api_keys as k")
    .join("users as u", "u.id", "k.user_id")
    .where("k.key_hash", keyHash)
    .first("k.*", "u.deleted_at as user_deleted_at", "u.suspended_at as user_suspended_at", "u.suspension_reason as user_suspension_reason");
}

export async function touchApiKey(knex: Knex, id: string, now: Date): Promise<void> {
  await knex("api_keys").where({ id }).update({ last_used_at: now });
}
