import type { Knex } from "knex";
import { rowsWhereIn } from "./db/rows.ts";
import type { Services } from "./services.ts";

/** One row of the data export archive, as JSON. */
export type ArchiveRow = Record<string, unknown>;

/** What a section is given to read one user's data. */
export interface ExportContext {
  services: Services;
  knex: Knex;
  userId: string;
  /** Ids of every persona the user created, read once for all sections. */
  personaIds: string[];
}

/**
 * One area's part of the data export and of the account purge. Each area declares its sections in
 * its own `account-data.ts`; server/account-sections.ts registers them all. A test lists every
 * table of the catalog that hangs off `users` (directly or through a chain of foreign keys) and
 * fails when one is claimed by no section, so a new area cannot forget the export or the purge.
 */
export interface AccountDataSection {
  /** Its key in the archive (DataExportArchive); sections without `exportRows` add no key. */
  key: string;
  /** The user-owned tables this section answers for, exported or deliberately withheld. */
  tables: readonly string[];
  /** Why these tables stay out of the archive (credentials, caches, counters). Set exactly when `exportRows` is absent. */
  withheld?: string;
  /** The user's rows for the archive: never credentials, secrets, tokens or payment-method details. */
  exportRows?(context: ExportContext): Promise<ArchiveRow[]>;
  /**
   * Runs before the purged accounts' rows are deleted (every table cascades from `users`): undoes
   * what lives outside the database (files, provider subscriptions, platform webhooks). It must not
   * throw for one account's failure: log it and go on, so that the purge still happens.
   */
  beforePurge?(services: Services, userIds: string[]): Promise<void>;
}

// Credentials and machine-only data never leave: hashes, secrets, tokens (encrypted or not), vectors, search indexes.
const WITHHELD_COLUMN = /(^|_)(hash|secret|token|tokens|password|encrypted|embedding|search)(_|$)/;

/** A row for the archive: credential columns and binary values dropped, whatever the table. */
export function withoutSecrets(row: ArchiveRow): ArchiveRow {
  return Object.fromEntries(Object.entries(row).filter(([column, value]) => !WITHHELD_COLUMN.test(column) && !Buffer.isBuffer(value)));
}

/** The rows of `table` whose `column` is one of `values`, ready for the archive. */
export async function archiveRows(knex: Knex, table: string, column: string, values: readonly string[], orderBy = "created_at"): Promise<ArchiveRow[]> {
  return (await rowsWhereIn(knex, table, column, values, orderBy)).map(withoutSecrets);
}
