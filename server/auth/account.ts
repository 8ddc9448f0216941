import { v7 as uuidv7 } from "uuid";
import { principalOf } from "../http/authenticate.ts";
import { ApiError } from "../http/errors.ts";
import type { Handler } from "../http/router.ts";
import type { Services } from "../services.ts";
import { deleteExport, findReadyExport, insertOrFindProcessingExport, markUserDeleted, revokeUserApiKeys } from "./account-store.ts";
import { DATA_EXPORT_MAX_ATTEMPTS, DATA_EXPORT_TASK, PURGE_AFTER_MS } from "./account-jobs.ts";
import type { DataExportArchive } from "./export-archive.ts";
import { exportLinkKey, verifyExportLink } from "./export-links.ts";
import { revokeUserSessions } from "./store.ts";

// Account deletion and data export. Only handlers are exported: server/handlers.ts spreads this module.

/**
 * Disables the account at once: deleted_at set, every session (so every access and refresh token)
 * and every API key revoked, in one transaction. The rows stay until account_purge removes them.
 */
async function deleteAccount(services: Services, userId: string): Promise<{ deletedAt: Date; purgeAt: Date }> {
  const now = services.now();
  const deletedAt = await services.db.knex.transaction(async (trx) => {
    const at = await markUserDeleted(trx, userId, now);
    if (!at) throw new ApiError(401, "unauthorized", "The account no longer exists");
    await revokeUserSessions(trx, userId, now);
    await revokeUserApiKeys(trx, userId, now);
    return at;
  });
  return { deletedAt, purgeAt: new Date(deletedAt.getTime() + PURGE_AFTER_MS) };
}

/** Starts an export, or answers the one already processing for the user. */
async function requestExport(services: Services, userId: string) {
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
async function downloadExport(services: Services, exportId: string, expires: number, signature: string): Promise<DataExportArchive> {
  const key = await exportLinkKey(services);
  if (!verifyExportLink(key, exportId, expires, signature, services.now())) {
    throw new ApiError(403, "forbidden", "The download link is invalid or has expired; request a new export");
  }
  const row = await findReadyExport(services.db.knex, exportId);
  if (!row?.archive) throw new ApiError(404, "not_found", "No such export");
  return row.archive as DataExportArchive;
}

export const auth_delete_me: Handler<"auth_delete_me"> = async ({ services, req }) => {
  const { deletedAt, purgeAt } = await deleteAccount(services, principalOf(req).userId);
  return {
    status: 200,
    body: {
      message: "Account scheduled for deletion.",
      deleted_at: deletedAt.toISOString(),
      grace_period_ends: purgeAt.toISOString(),
    },
  };
};

export const auth_export_data: Handler<"auth_export_data"> = async ({ services, req }) => {
  const row = await requestExport(services, principalOf(req).userId);
  return {
    status: 200,
    body: {
      message: "Export started. A download link will be e-mailed within 24 hours.",
      export_id: row.id,
      status: "processing",
      requested_at: row.requested_at.toISOString(),
    },
  };
};

export const auth_download_export: Handler<"auth_download_export"> = async ({ services, params, query }) => {
  const exportId = params.export_id;
  const archive = await downloadExport(services, exportId, Number(query.expires), query.signature);
  const day = archive.exported_at.slice(0, 10);
  return {
    status: 200,
    body: archive,
    headers: { "content-disposition": `attachment; filename="persona-export-${day}.json"`, "cache-control": "no-store" },
  };
};
