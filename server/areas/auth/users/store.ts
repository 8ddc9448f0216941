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
  /** Issue 41: a suspended account cannot sign in or use its credentials; its public content is hidden. */
  suspended_at?: Date | null;
  suspension_reason?: string | null;
  /** Issue 41: an operator took the profile down: it is not shown to others. */
  profile_taken_down_at?: Date | null;
  /** Issue 41: the account's opt-in to content rated `mature`. */
  show_mature?: boolean;
}

/** Postgres' unique_violation: the caller maps it to 409. */
export { isUniqueViolation } from "../../../toolkit/db/rows.ts";

export async function insertUser(knex: Knex, user: Omit<UserRow, "deleted_at" | "email_verified">): Promise<UserRow> {
  const [row] = await knex("users").insert(user).returning("*");
  return row as UserRow;
}

export async function findUserById(knex: Knex, id: string): Promise<UserRow | undefined> {
  return knex("users").where({ id }).whereNull("deleted_at").first();
}

/** The account with this e-mail, deleted or not (an address belongs to one account until the purge). */
export async function findUserByEmailIncludingDeleted(knex: Knex, email: string): Promise<UserRow | undefined> {
  return knex("users").whereRaw("lower(email) = lower(?)", [email]).first();
}

export async function findUserIncludingDeleted(knex: Knex, id: string): Promise<UserRow | undefined> {
  return knex("users").where({ id }).first();
}

export async function updateUser(knex: Knex, id: string, changes: Partial<UserRow>): Promise<UserRow | undefined> {
  const [row] = await knex("users").where({ id }).whereNull("deleted_at").update(changes).returning("*");
  return row as UserRow | undefined;
}

/** Sets deleted_at; undefined if the account is already deleted or gone. */
export async function markUserDeleted(knex: Knex, userId: string, now: Date): Promise<Date | undefined> {
  const [row] = await knex("users").where({ id: userId }).whereNull("deleted_at").update({ deleted_at: now }).returning("deleted_at");
  return (row as { deleted_at: Date } | undefined)?.deleted_at;
}

/**
 * Clears deleted_at of an account deleted after `cutoff` (its grace period not over); undefined when
 * it is live, past its grace period or gone. One statement: of two concurrent restores one wins.
 */
export async function unmarkUserDeleted(knex: Knex, userId: string, cutoff: Date, now: Date): Promise<UserRow | undefined> {
  const [row] = await knex("users").where({ id: userId }).whereNotNull("deleted_at").where("deleted_at", ">", cutoff).update({ deleted_at: null, updated_at: now }).returning("*");
  return row as UserRow | undefined;
}

/** Ids of the accounts deleted before `cutoff`. */
export async function idsOfUsersDeletedBefore(knex: Knex, cutoff: Date): Promise<string[]> {
  const rows = await knex("users").whereNotNull("deleted_at").where("deleted_at", "<", cutoff).select<{ id: string }[]>("id");
  return rows.map((row) => row.id);
}

/** Removes these accounts if they are (still) deleted; every table referencing users cascades. */
export async function purgeDeletedUsers(knex: Knex, userIds: readonly string[]): Promise<number> {
  if (userIds.length === 0) return 0;
  return knex("users").whereIn("id", userIds).whereNotNull("deleted_at").delete();
}

/** Foreign keys onto users that would block (or outlive) a purge: all must be ON DELETE CASCADE. */
export async function nonCascadingUserReferences(knex: Knex): Promise<{ table: string; constraint: string }[]> {
  const result = await knex.raw<{ rows: { table: string; constraint: string }[] }>(
    `SELECT c.conrelid::regclass::text AS "table", c.conname AS "constraint"
       FROM pg_constraint c
      WHERE c.contype = 'f' AND c.confrelid = 'users'::regclass AND c.confdeltype <> 'c'`,
  );
  return result.rows;
}

/** An account as the operator's list shows it. */
export interface AccountRow {
  id: string;
  email: string;
  username: string;
  plan: string;
  created_at: Date;
}

const COLUMNS = ["id", "email", "username", "plan", "created_at"] as const;

/** Live accounts, newest first, optionally only those on `plan`. */
export async function listLiveAccounts(knex: Knex, filter: { plan?: string | undefined; limit: number }): Promise<AccountRow[]> {
  const query = knex<AccountRow>("users")
    .select(...COLUMNS)
    .whereNull("deleted_at")
    .orderBy([{ column: "created_at", order: "desc" }, { column: "id", order: "desc" }])
    .limit(filter.limit);
  if (filter.plan) query.where("plan", filter.plan);
  return (await query) as AccountRow[];
}

/** Sets the plan of the live account named by id, e-mail or username (any letter case); undefined when there is none. */
export async function updatePlanOf(knex: Knex, who: string, plan: string, now: Date): Promise<AccountRow | undefined> {
  const [row] = await knex("users")
    .whereNull("deleted_at")
    .andWhere((match) => match.whereRaw("id::text = ?", [who]).orWhereRaw("lower(email) = lower(?)", [who]).orWhereRaw("lower(username) = lower(?)", [who]))
    .update({ plan, updated_at: now })
    .returning([...COLUMNS]);
  return row as AccountRow | undefined;
}

// ---------------------------------------------------------------- trust and safety (issue 41)

/** The account named by id, e-mail or username (any letter case), deleted or not; undefined when none. */
export async function findUserByAnyName(knex: Knex, who: string): Promise<UserRow | undefined> {
  return knex("users")
    .where((match) => match.whereRaw("id::text = ?", [who]).orWhereRaw("lower(email) = lower(?)", [who]).orWhereRaw("lower(username) = lower(?)", [who]))
    .first();
}

/** Suspends (`at` and a reason) or unsuspends (null) a live account; undefined when there is none. */
export async function setSuspension(knex: Knex, id: string, at: Date | null, reason: string | null): Promise<UserRow | undefined> {
  const [row] = await knex("users").where({ id }).whereNull("deleted_at").update({ suspended_at: at, suspension_reason: reason }).returning("*");
  return row as UserRow | undefined;
}

/** Takes the account's profile down (`at`) or puts it back (null); false when there is none. */
export async function setProfileTakenDown(knex: Knex, id: string, at: Date | null): Promise<boolean> {
  return (await knex("users").where({ id }).update({ profile_taken_down_at: at })) > 0;
}

/** The account's opt-in to mature content; undefined when the account is not live. */
export async function setShowMature(knex: Knex, id: string, show: boolean): Promise<boolean | undefined> {
  const [row] = await knex("users").where({ id }).whereNull("deleted_at").update({ show_mature: show }).returning("show_mature");
  return (row as { show_mature: boolean } | undefined)?.show_mature;
}
