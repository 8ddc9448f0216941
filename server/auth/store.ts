import type { Knex } from "knex";

export interface UserRow {
  id: string;
  email: string;
  username: string;
  password_hash: string;
  display_name: string | null;
  avatar_url: string | null;
  bio: string | null;
  email_verified: boolean;
  plan: string;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

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

/** Postgres' unique_violation: the caller maps it to 409. */
export const isUniqueViolation = (error: unknown, index?: string) =>
  (error as { code?: string }).code === "23505" && (!index || (error as { constraint?: string }).constraint === index);

export async function insertUser(knex: Knex, user: Omit<UserRow, "deleted_at" | "email_verified" | "plan">): Promise<UserRow> {
  const [row] = await knex("users").insert(user).returning("*");
  return row as UserRow;
}

export async function findUserById(knex: Knex, id: string): Promise<UserRow | undefined> {
  return knex("users").where({ id }).whereNull("deleted_at").first();
}

export async function findUserByEmail(knex: Knex, email: string): Promise<UserRow | undefined> {
  return knex("users").whereRaw("lower(email) = lower(?)", [email]).whereNull("deleted_at").first();
}

export async function updateUser(knex: Knex, id: string, changes: Partial<UserRow>): Promise<UserRow | undefined> {
  const [row] = await knex("users").where({ id }).whereNull("deleted_at").update(changes).returning("*");
  return row as UserRow | undefined;
}

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

export async function revokeUserSessions(knex: Knex, userId: string, now: Date): Promise<void> {
  await knex("sessions").where({ user_id: userId }).whereNull("revoked_at").update({ revoked_at: now });
}

/** The user and session behind an access token, if both are still good. */
export async function findActiveSession(knex: Knex, userId: string, sessionId: string): Promise<{ user_id: string } | undefined> {
  return knex("sessions as s")
    .join("users as u", "u.id", "s.user_id")
    .where({ "s.id": sessionId, "s.user_id": userId })
    .whereNull("s.revoked_at")
    .whereNull("u.deleted_at")
    .first("s.user_id");
}

export async function findApiKeyByHash(knex: Knex, keyHash: string): Promise<(ApiKeyRow & { user_deleted_at: Date | null }) | undefined> {
  return knex("api_keys as k")
    .join("users as u", "u.id", "k.user_id")
    .where("k.key_hash", keyHash)
    .first("k.*", "u.deleted_at as user_deleted_at");
}

export async function touchApiKey(knex: Knex, id: string, now: Date): Promise<void> {
  await knex("api_keys").where({ id }).update({ last_used_at: now });
}
