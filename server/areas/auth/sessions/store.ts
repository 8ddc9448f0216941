import type { Knex } from "knex";

export async function insertSession(
  knex: Knex,
  session: { id: string; user_id: string; client_id: string | null; scopes: string[] | null; created_at: Date },
): Promise<void> {
  await knex("sessions").insert(session);
}

export async function insertRefreshToken(
  knex: Knex,
  token: { token_hash: string; session_id: string; created_at: Date; expires_at: Date },
): Promise<void> {
  await knex("refresh_tokens").insert(token);
}

export interface RefreshLookup {
  session_id: string;
  user_id: string;
  client_id: string | null;
  scopes: string[] | null;
  used_at: Date | null;
  expires_at: Date;
  session_revoked_at: Date | null;
  user_deleted_at: Date | null;
  user_suspended_at: Date | null;
  user_suspension_reason: string | null;
}

export async function findRefreshToken(knex: Knex, tokenHash: string): Promise<RefreshLookup | undefined> {
  return knex("refresh_tokens as t")
    .join("sessions as s", "s.id", "t.session_id")
    .join("users as u", "u.id", "s.user_id")
    .where("t.token_hash", tokenHash)
    .first(
      "t.session_id",
      "s.user_id",
      "s.client_id",
      "s.scopes",
      "t.used_at",
      "t.expires_at",
      "s.revoked_at as session_revoked_at",
      "u.deleted_at as user_deleted_at",
      "u.suspended_at as user_suspended_at",
      "u.suspension_reason as user_suspension_reason",
    );
}

/** Marks the token used; false if it already was (exactly one of two concurrent refreshes wins). */
export async function consumeRefreshToken(knex: Knex, tokenHash: string, now: Date): Promise<boolean> {
  const updated = await knex("refresh_tokens").where({ token_hash: tokenHash }).whereNull("used_at").update({ used_at: now });
  return updated === 1;
}

export async function revokeSession(knex: Knex, sessionId: string, now: Date): Promise<void> {
  await knex("sessions").where({ id: sessionId }).whereNull("revoked_at").update({ revoked_at: now });
}

/** Revokes every live session of the user; answers how many were logins and how many OAuth grants. */
export async function revokeUserSessions(knex: Knex, userId: string, now: Date): Promise<{ logins: number; grants: number }> {
  const rows: { client_id: string | null }[] = await knex("sessions").where({ user_id: userId }).whereNull("revoked_at").update({ revoked_at: now }).returning("client_id");
  const grants = rows.filter((row) => row.client_id !== null).length;
  return { logins: rows.length - grants, grants };
}

/** The user and session behind an access token, if both are still good. */
export async function findActiveSession(
  knex: Knex,
  userId: string,
  sessionId: string,
): Promise<{ user_id: string; suspended_at: Date | null; suspension_reason: string | null } | undefined> {
  return knex("sessions as s")
    .join("users as u", "u.id", "s.user_id")
    .where({ "s.id": sessionId, "s.user_id": userId })
    .whereNull("s.revoked_at")
    .whereNull("u.deleted_at")
    .first("s.user_id", "u.suspended_at", "u.suspension_reason");
}

/** When a live login of the user (a session of no OAuth client) started. */
export async function findSessionStart(knex: Knex, userId: string, sessionId: string): Promise<Date | undefined> {
  const row = await knex("sessions").where({ id: sessionId, user_id: userId }).whereNull("revoked_at").whereNull("client_id").first<{ created_at: Date } | undefined>("created_at");
  return row?.created_at;
}
