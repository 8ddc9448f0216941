import type { Knex } from "knex";
import { accountDataSections } from "../../server/areas.ts";
import { buildArchive, type DataExportArchive } from "../../server/areas/auth/account/export-archive.ts";
import { purgeAccounts } from "../../server/areas/auth/account/jobs.ts";
import type { Services } from "../../server/toolkit/services.ts";

/** The data export archive of a user, built by every registered section. */
export function archiveOf(services: Services, userId: string, knex: Knex = services.db.knex): Promise<DataExportArchive> {
  return knex("users")
    .where({ id: userId })
    .first()
    .then((user) => buildArchive(services, accountDataSections, user, knex));
}

/** Runs the nightly purge of accounts deleted more than 30 days ago, with every registered section. */
export function purgeDeletedAccounts(services: Services): Promise<{ users: number; exports: number }> {
  return purgeAccounts(services, accountDataSections);
}
