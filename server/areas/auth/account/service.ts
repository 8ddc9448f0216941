import { v7 as uuidv7 } from "uuid";
import { conflict, forbidden, invalidField, notFoundExplained, unauthorized } from "../../../toolkit/http/error-catalogue.ts";
import type { Principal } from "../../../toolkit/http/principal.ts";
import type { Services } from "../../../toolkit/services.ts";
import { restoreUserApiKeys, revokeUserApiKeys } from "../api-keys/service.ts";
import { revokedCredentials } from "../credential-cache.ts";
import { hashPassword } from "../passwords.ts";
import { loginStartedAt, revokeUserSessions, startSession, type IssuedTokens } from "../sessions/service.ts";
import { checkAnyCredentials, createUser, gracePeriodEnd, isPasswordOf, markDeleted, unmarkDeleted, type UserRow } from "../users/service.ts";
import type { DataExportArchive } from "./export-archive.ts";
import { exportLinkKey, verifyExportLink } from "./export-links.ts";
import { DATA_EXPORT_MAX_ATTEMPTS, DATA_EXPORT_TASK, PURGE_AFTER_MS } from "./jobs.ts";
import { deleteExport, findReadyExport, insertOrFindProcessingExport, type DataExportRow } from "./store.ts";

// The account's life: registration, deletion, data export.

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

/** How recent a login must be to delete its account without the password (issue 34). */
export const FRESH_LOGIN_MS = 10 * 60_000;

/**
 * A deletion is confirmed by the account's password, or by a session token from a login (or
 * registration) of the last 10 minutes: the person has just proven who they are. An API key or an
 * OAuth token always needs the password, so that a leaked key cannot delete the account. A wrong
 * password is 403 (not 401: the credential itself is good); nothing is deleted either way.
 */
async function confirmDeletion(services: Services, principal: Principal, password: string | undefined): Promise<void> {
  if (password !== undefined) {
    if (!(await isPasswordOf(services, principal.userId, password))) throw forbidden("The password is wrong: the account was not deleted");
    return;
  }
  if (principal.kind === "session" && principal.sessionId) {
    const started = await loginStartedAt(services, principal.userId, principal.sessionId);
    if (started && services.now().getTime() - started.getTime() <= FRESH_LOGIN_MS) return;
  }
  const minutes = FRESH_LOGIN_MS / 60_000;
  throw invalidField(
    "/body/password",
    `is required to delete the account (a session from a login of the last ${minutes} minutes needs none)`,
    `Confirm the deletion with the account's password: send {"password": "…"} (or log in again: a login of the last ${minutes} minutes needs none)`,
  );
}

/**
 * Disables the account at once, once confirmed: deleted_at set, every session (so every access and
 * refresh token) and every API key revoked, in one transaction. The rows stay until account_purge
 * removes them; until then `restoreAccount` undoes it.
 */
export async function deleteAccount(services: Services, principal: Principal, password?: string): Promise<{ deletedAt: Date; purgeAt: Date }> {
  await confirmDeletion(services, principal, password);
  const { userId } = principal;
  const now = services.now();
  const deletedAt = await services.db.knex.transaction(async (trx) => {
    const at = await markDeleted(trx, userId, now);
    if (!at) throw unauthorized("The account no longer exists");
    await revokeUserSessions(trx, userId, now);
    await revokeUserApiKeys(trx, userId, now, { withAccount: true });
    return at;
  });
  await revokedCredentials(services, { userId });
  return { deletedAt, purgeAt: new Date(deletedAt.getTime() + PURGE_AFTER_MS) };
}

/**
 * Undoes a deletion during its grace period (issue 34), for whoever has the account's e-mail and
 * password: deleted_at cleared, which brings back everything the account owns (every area hides a
 * deleted account's things by that column alone, and nothing is removed before the purge), and the
 * API keys the deletion revoked; the sessions it ended stay ended, and the answer is a new login.
 * One transaction: the account comes back whole, or not at all.
 */
export async function restoreAccount(services: Services, email: string, password: string): Promise<{ user: UserRow; tokens: IssuedTokens; apiKeys: number }> {
  const user = await checkAnyCredentials(services, email, password);
  if (!user) throw unauthorized("The e-mail or password is wrong");
  const notDeleted = () => conflict("This account is not scheduled for deletion: log in with POST /v1/auth/login");
  if (!user.deleted_at) throw notDeleted();
  const now = services.now();
  if (gracePeriodEnd(user.deleted_at) <= now) {
    throw conflict(`The grace period of this account ended on ${gracePeriodEnd(user.deleted_at).toISOString().slice(0, 10)}: it can no longer be restored`);
  }
  return services.db.knex.transaction(async (trx) => {
    // Restored by a concurrent call meanwhile (or its grace period ran out this instant).
    const restored = await unmarkDeleted(trx, user.id, now);
    if (!restored) throw notDeleted();
    const apiKeys = await restoreUserApiKeys(trx, user.id, now);
    const { sessionId: _, ...tokens } = await startSession(services, user.id, {}, trx);
    return { user: restored, tokens, apiKeys };
  });
}

/** Starts an export, or answers the one already processing for the user. */
export async function requestExport(services: Services, userId: string): Promise<DataExportRow> {
  const { knex } = services.db;
  const { row, created } = await insertOrFindProcessingExport(knex, { id: uuidv7(), user_id: userId, requested_at: services.now() });
  if (created) {
    try {
      await services.jobs.add(DATA_EXPORT_TASK, { exportId: row.id }, { jobKey: `data_export:${row.id}`, maxAttempts: DATA_EXPORT_MAX_ATTEMPTS });
    } catch (error) {
      // Without its job the export would stay "processing" forever and answer every later request.
      await deleteExport(knex, row.id);
      throw error;
    }
  }
  return row;
}

/**
 * The archive behind a signed link. The link is its own authorization (whoever holds it may
 * download), so it is checked before anything is looked up: a bad or expired signature is 403
 * whether or not the export exists. An export of a deleted account is no longer served.
 */
export async function downloadExport(services: Services, exportId: string, expires: number, signature: string): Promise<DataExportArchive> {
  const key = await exportLinkKey(services);
  if (!verifyExportLink(key, exportId, expires, signature, services.now())) {
    throw forbidden("The download link is invalid or has expired; request a new export");
  }
  const row = await findReadyExport(services.db.knex, exportId);
  if (!row?.archive) throw notFoundExplained("No such export");
  return row.archive as DataExportArchive;
}
