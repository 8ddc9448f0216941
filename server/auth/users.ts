import type { Knex } from "knex";
import { v7 as uuidv7 } from "uuid";
import type { components } from "../../generated/openapi.d.ts";
import { ApiError } from "../http/errors.ts";
import type { Services } from "../services.ts";
import { hashPassword } from "./passwords.ts";
import { startSession, type IssuedTokens } from "./sessions.ts";
import { findUserById, insertUser, isUniqueViolation, updateUser, type UserRow } from "./store.ts";

export type User = components["schemas"]["User"];

export function toUser(row: UserRow): User {
  return {
    id: row.id,
    email: row.email,
    username: row.username,
    display_name: row.display_name,
    avatar_url: row.avatar_url,
    bio: row.bio,
    email_verified: row.email_verified,
    plan: row.plan as User["plan"],
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** A taken e-mail or username is 409, whatever its letter case. */
function conflictFor(error: unknown): ApiError | undefined {
  if (isUniqueViolation(error, "users_email_lower")) return new ApiError(409, "conflict", "An account with this e-mail already exists");
  if (isUniqueViolation(error, "users_username_lower")) return new ApiError(409, "conflict", "This username is taken");
  return undefined;
}

/**
 * Creates the account and its first session in one transaction, so that a failure leaves neither.
 * The password is hashed before the transaction opens: argon2 takes tens of milliseconds, and the
 * embedded database has one session that a transaction holds.
 */
export async function registerAccount(
  services: Services,
  input: { email: string; username: string; password: string },
): Promise<{ user: UserRow; tokens: IssuedTokens }> {
  const passwordHash = await hashPassword(input.password);
  return services.db.knex.transaction(async (trx) => {
    const user = await createUser(services, { ...input, passwordHash }, trx);
    const { sessionId: _, ...tokens } = await startSession(services, user.id, {}, trx);
    return { user, tokens };
  });
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
      created_at: now,
      updated_at: now,
    });
  } catch (error) {
    throw conflictFor(error) ?? error;
  }
}

export async function getUser(services: Services, id: string): Promise<UserRow> {
  const row = await findUserById(services.db.knex, id);
  if (!row) throw new ApiError(401, "unauthorized", "The account no longer exists");
  return row;
}

export async function updateProfile(services: Services, id: string, changes: components["schemas"]["UserUpdate"]): Promise<UserRow> {
  const fields: Partial<UserRow> = { updated_at: services.now() };
  for (const key of ["username", "display_name", "avatar_url", "bio"] as const) {
    if (changes[key] !== undefined) (fields as Record<string, unknown>)[key] = changes[key];
  }
  try {
    const row = await updateUser(services.db.knex, id, fields);
    if (!row) throw new ApiError(401, "unauthorized", "The account no longer exists");
    return row;
  } catch (error) {
    throw conflictFor(error) ?? error;
  }
}
