import type { Task, TaskList } from "graphile-worker";
import type { AccountDataSection } from "../../../toolkit/account-data.ts";
import type { Services } from "../../../toolkit/services.ts";
import { deletedBefore, findAnyUser, GRACE_PERIOD_MS, purgeUsers } from "../users/service.ts";
import { buildArchive } from "./export-archive.ts";
import { EXPORT_LINK_TTL_MS, exportDownloadUrl, exportLinkKey } from "./export-links.ts";
import { completeExport, failExport, findExport, purgeExportsCompletedBefore } from "./store.ts";

/** A deleted account is purged this long after deletion (DECISIONS: Account deletion): its grace period, during which it can be restored. */
export const PURGE_AFTER_MS = GRACE_PERIOD_MS;
export const ACCOUNT_PURGE_TASK = "account_purge";
export const DATA_EXPORT_TASK = "data_export";
export const DATA_EXPORT_MAX_ATTEMPTS = 5;

/**
 * Removes accounts deleted more than 30 days ago, and archives whose links can no longer work.
 * Each section first undoes what lives outside the database (files, provider subscriptions); then
 * the users' rows go, and every table cascades from them.
 */
export async function purgeAccounts(services: Services, sections: readonly AccountDataSection[]): Promise<{ users: number; exports: number }> {
  const now = services.now().getTime();
  const { knex } = services.db;
  const ids = await deletedBefore(services, new Date(now - PURGE_AFTER_MS));
  if (ids.length > 0) {
    for (const section of sections) {
      try {
        await section.beforePurge?.(services, ids);
      } catch (error) {
        services.log.error({ err: error, section: section.key, users: ids.length }, "an area could not clean up purged accounts; purging them anyway");
      }
    }
  }
  const users = await purgeUsers(services, ids);
  const exports = await purgeExportsCompletedBefore(knex, new Date(now - EXPORT_LINK_TTL_MS));
  if (users || exports) services.log.info({ users, exports }, "deleted accounts and expired exports purged");
  return { users, exports };
}

/**
 * Builds the archive, stores it, marks the export ready, then mails the signed link. A retry after
 * the mail failed finds the export ready and only mails again; the last failed attempt marks the
 * export failed so that the user can request a new one.
 */
export async function runDataExport(services: Services, sections: readonly AccountDataSection[], exportId: string, lastAttempt = true): Promise<void> {
  const { knex } = services.db;
  const row = await findExport(knex, exportId);
  if (!row || row.status === "failed") return;
  const user = await findAnyUser(services, row.user_id);
  if (!user || user.deleted_at) {
    await failExport(knex, exportId, "The account was deleted", services.now());
    return;
  }
  try {
    if (row.status === "processing") {
      const archive = await buildArchive(services, sections, user);
      await completeExport(knex, exportId, archive, services.now());
    }
    const { url, expiresAt } = exportDownloadUrl(services, await exportLinkKey(services), exportId, services.now());
    await services.providers.email.send({
      to: user.email,
      kind: "data_export",
      subject: "Your Persona data export is ready",
      text: [
        "The archive of your Persona data you asked for is ready. Download it here:",
        "",
        url,
        "",
        `The link works until ${expiresAt.toISOString()}. Anyone who has it can download the archive, so do not forward it.`,
      ].join("\n"),
    });
  } catch (error) {
    if (lastAttempt) await failExport(knex, exportId, error instanceof Error ? error.message : String(error), services.now());
    throw error;
  }
}

/** Jobs of account deletion and data export. */
export function accountTasks(services: Services, sections: readonly AccountDataSection[]): TaskList {
  const purge: Task = async () => {
    await purgeAccounts(services, sections);
  };
  const dataExport: Task = async (payload, helpers) => {
    const { exportId } = payload as { exportId: string };
    await runDataExport(services, sections, exportId, helpers.job.attempts >= helpers.job.max_attempts);
  };
  return { [ACCOUNT_PURGE_TASK]: purge, [DATA_EXPORT_TASK]: dataExport };
}

/** Their recurring schedule (graphile-worker crontab lines). */
export const accountCrontab: string[] = [`0 3 * * * ${ACCOUNT_PURGE_TASK}`];
