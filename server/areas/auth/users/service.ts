import type { Knex } from "knex";
import { v7 as uuidv7 } from "uuid";
import type { components } from "../../../../generated/openapi.d.ts";
import { accountPendingDeletion, conflict, unauthorized } from "../../../toolkit/http/error-catalogue.ts";
import type { ApiError } from "../../../toolkit/http/errors.ts";
import { screen } from "../../../toolkit/moderation.ts";
import type { Services } from "../../../toolkit/services.ts";
import { verifyPassword } from "../passwords.ts";
import {
  findUserByEmailIncludingDeleted,
  findUserById,
  findUserIncludingDeleted,
  insertUser,
  isUniqueViolation,
  markUserDeleted,
  unmarkUserDeleted,
  idsOfUsersDeletedBefore,
  purgeDeletedUsers,
  updateUser,
  type UserRow,
} from "./store.ts";

// The user record, shared by the auth sub-areas: sessions and OAuth check passwords here, account
// creates, changes and deletes. It has no handlers of its own. Functions that take `db` can run
// inside a caller's transaction.

export type { UserRow } from "./store.ts";

/** A taken e-mail or username is 409, whatever its letter case. */
function conflictFor(error: unknown): ApiError | undefined {
  if (isUniqueViolation(error, "users_email_lower")) return conflict("An account with this e-mail already exists");
  if (isUniqueViolation(error, "users_username_lower")) return conflict("This username is taken");
  return undefined;
}

export async function createUser(
  services: Services,
  input: { email: string; username: string; passwordHash: string },
  db: Knex = services.db.knex,
): Promise<UserRow> {
  const now = services.now();
  try {
    return await insertUser(db, {
      id: uuidv7(),
      email: input.email,
      username: input.username,
      password_hash: input.passwordHash,
      display_name: null,
      avatar_url: null,
      bio: null,
      plan: services.config.defaultPlan,
      created_at: now,
      updated_at: now,
    });
  } catch (error) {
    throw conflictFor(error) ?? error;
  }
}

/** A deleted account is purged this long after its deletion; until then it can be restored (DECISIONS: Account deletion). */
export const GRACE_PERIOD_MS = 30 * 24 * 60 * 60 * 1000;

/** When the grace period of an account deleted at `deletedAt` ends. */
export const gracePeriodEnd = (deletedAt: Date) => new Date(deletedAt.getTime() + GRACE_PERIOD_MS);

/**
 * The account with this e-mail and password, deleted (in or past its grace period) or not, else
 * undefined. An unknown e-mail and a wrong password take the same time.
 */
export async function checkAnyCredentials(services: Services, email: string, password: string): Promise<UserRow | undefined> {
  const user = await findUserByEmailIncludingDeleted(services.db.knex, email);
  if (!(await verifyPassword(user?.password_hash, password)) || !user) return undefined;
  return user;
}

/** The live account with this e-mail and password, else undefined (a deleted account's too). */
export async function checkCredentials(services: Services, email: string, password: string): Promise<UserRow | undefined> {
  const user = await checkAnyCredentials(services, email, password);
  return user && !user.deleted_at ? user : undefined;
}

/** Whether `password` is the password of the live account `userId` (an account deletion's confirmation). */
export async function isPasswordOf(services: Services, userId: string, password: string): Promise<boolean> {
  const user = await findUserById(services.db.knex, userId);
  return (await verifyPassword(user?.password_hash, password)) && user !== undefined;
}

/**
 * The refusal of a login, by its owner, to an account scheduled for deletion (issue 34): it says
 * when the account goes and whether `POST /v1/auth/me/restore` can still bring it back.
 */
export function pendingDeletionRefusal(deletedAt: Date, now: Date): ApiError {
  const ends = gracePeriodEnd(deletedAt);
  const day = ends.toISOString().slice(0, 10);
  const restorable = ends > now;
  const facts = { deleted_at: deletedAt.toISOString(), grace_period_ends: ends.toISOString(), restorable };
  if (!restorable) return accountPendingDeletion(`This account was deleted and its grace period ended on ${day}: it can no longer be restored`, facts);
  return accountPendingDeletion(
    `This account is scheduled for deletion on ${day}: restore it with POST /v1/auth/me/restore (the same e-mail and password) to use it again`,
    { ...facts, restore: "POST /v1/auth/me/restore" },
  );
}

/** The caller's own account; 401 once it is deleted. */
export async function getUser(services: Services, id: string): Promise<UserRow> {
  const row = await findUserById(services.db.knex, id);
  if (!row) throw unauthorized("The account no longer exists");
  return row;
}

export async function isLiveUser(services: Services, id: string): Promise<boolean> {
  return Boolean(await findUserById(services.db.knex, id));
}

export async function findAnyUser(services: Services, id: string): Promise<UserRow | undefined> {
  return findUserIncludingDeleted(services.db.knex, id);
}

export async function updateProfile(services: Services, id: string, changes: components["schemas"]["UserUpdate"]): Promise<UserRow> {
  // A display name is shown wherever the account appears: a flagged one is refused, never held (issue 41).
  if (changes.display_name) await screen(services, { label: "The display name", texts: [changes.display_name], holdable: false });
  const fields: Partial<UserRow> = { updated_at: services.now() };
  for (const key of ["username", "display_name", "avatar_url", "bio"] as const) {
    if (changes[key] !== undefined) (fields as Record<string, unknown>)[key] = changes[key];
  }
  try {
    const row = await updateUser(services.db.knex, id, fields);
    if (!row) throw unauthorized("The account no longer exists");
    return row;
  } catch (error) {
    throw conflictFor(error) ?? error;
  }
}

/** Whether a live account was marked verified. */
export async function markEmailVerified(db: Knex, userId: string, now: Date): Promise<boolean> {
  return Boolean(await updateUser(db, userId, { email_verified: true, updated_at: now }));
}

/** Whether a live account's password was replaced. */
export async function replacePasswordHash(db: Knex, userId: string, passwordHash: string, now: Date): Promise<boolean> {
  return Boolean(await updateUser(db, userId, { password_hash: passwordHash, updated_at: now }));
}

/** Sets deleted_at; undefined if the account is already deleted or gone. */
export function markDeleted(db: Knex, userId: string, now: Date): Promise<Date | undefined> {
  return markUserDeleted(db, userId, now);
}

/**
 * Makes an account deleted less than the grace period before `now` live again, inside the caller's
 * transaction; undefined when it is live, past its grace period, or gone.
 */
export function unmarkDeleted(db: Knex, userId: string, now: Date): Promise<UserRow | undefined> {
  return unmarkUserDeleted(db, userId, new Date(now.getTime() - GRACE_PERIOD_MS), now);
}

/** Ids of the accounts deleted before `cutoff`: those the purge removes. */
export function deletedBefore(services: Services, cutoff: Date): Promise<string[]> {
  return idsOfUsersDeletedBefore(services.db.knex, cutoff);
}

/** Removes these deleted accounts (their rows elsewhere cascade). */
export function purgeUsers(services: Services, userIds: readonly string[]): Promise<number> {
  return purgeDeletedUsers(services.db.knex, userIds);
}
