import type { Knex } from "knex";
import { v7 as uuidv7 } from "uuid";
import type { components } from "../../../../generated/openapi.d.ts";
import { conflict, unauthorized } from "../../../toolkit/http/error-catalogue.ts";
import type { ApiError } from "../../../toolkit/http/errors.ts";
import type { Services } from "../../../toolkit/services.ts";
import { verifyPassword } from "../passwords.ts";
import {
  findUserByEmail,
  findUserById,
  findUserIncludingDeleted,
  insertUser,
  isUniqueViolation,
  markUserDeleted,
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

/**
 * The live account with this e-mail and password, else undefined. An unknown e-mail and a wrong
 * password take the same time.
 */
export async function checkCredentials(services: Services, email: string, password: string): Promise<UserRow | undefined> {
  const user = await findUserByEmail(services.db.knex, email);
  if (!(await verifyPassword(user?.password_hash, password)) || !user) return undefined;
  return user;
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

/** Ids of the accounts deleted before `cutoff`: those the purge removes. */
export function deletedBefore(services: Services, cutoff: Date): Promise<string[]> {
  return idsOfUsersDeletedBefore(services.db.knex, cutoff);
}

/** Removes these deleted accounts (their rows elsewhere cascade). */
export function purgeUsers(services: Services, userIds: readonly string[]): Promise<number> {
  return purgeDeletedUsers(services.db.knex, userIds);
}
