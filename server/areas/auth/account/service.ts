import { v7 as uuidv7 } from "uuid";
import { forbidden, notFoundExplained, unauthorized } from "../../../toolkit/http/error-catalogue.ts";
import type { Services } from "../../../toolkit/services.ts";
import { revokeUserApiKeys } from "../api-keys/service.ts";
import { revokedCredentials } from "../credential-cache.ts";
import { hashPassword } from "../passwords.ts";
import { revokeUserSessions, startSession, type IssuedTokens } from "../sessions/service.ts";
import { createUser, markDeleted, type UserRow } from "../users/service.ts";
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

/**
 * Disables the account at once: deleted_at set, every session (so every access and refresh token)
 * and every API key revoked, in one transaction. The rows stay until account_purge removes them.
 */
export async function deleteAccount(services: Services, userId: string): Promise<{ deletedAt: Date; purgeAt: Date }> {
  const now = services.now();
  const deletedAt = await services.db.knex.transaction(async (trx) => {
    const at = await markDeleted(trx, userId, now);
    if (!at) throw unauthorized("The account no longer exists");
    await revokeUserSessions(trx, userId, now);
    await revokeUserApiKeys(trx, userId, now);
    return at;
  });
  await revokedCredentials(services, { userId });
  return { deletedAt, purgeAt: new Date(deletedAt.getTime() + PURGE_AFTER_MS) };
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
