import type { Knex } from "knex";
import type { UserRow } from "./store.ts";

export type DataExportStatus = "processing" | "ready" | "failed";

export interface DataExportRow {
  id: string;
  user_id: string;
  status: DataExportStatus;
  requested_at: Date;
  completed_at: Date | null;
  archive: Record<string, unknown> | null;
  error: string | null;
}

// ---------------------------------------------------------------- deletion

/** Sets deleted_at; undefined if the account is already deleted or gone. */
export async function markUserDeleted(knex: Knex, userId: string, now: Date): Promise<Date | undefined> {
  const [row] = await knex("users").where({ id: userId }).whereNull("deleted_at").update({ deleted_at: now }).returning("deleted_at");
  return (row as { deleted_at: Date } | undefined)?.deleted_at;
}

export async function revokeUserApiKeys(knex: Knex, userId: string, now: Date): Promise<void> {
  await knex("api_keys").where({ user_id: userId }).whereNull("revoked_at").update({ revoked_at: now });
}

/** Removes the accounts deleted before `cutoff`; every table referencing users cascades. */
export async function purgeUsersDeletedBefore(knex: Knex, cutoff: Date): Promise<number> {
  return knex("users").whereNotNull("deleted_at").where("deleted_at", "<", cutoff).delete();
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

// ---------------------------------------------------------------- exports

export async function findUserIncludingDeleted(knex: Knex, id: string): Promise<UserRow | undefined> {
  return knex("users").where({ id }).first();
}

/**
 * Inserts a processing export unless one is already processing for the user (the partial unique
 * index settles a race); returns the one that is processing either way, and whether it is new.
 */
export async function insertOrFindProcessingExport(
  knex: Knex,
  row: { id: string; user_id: string; requested_at: Date },
): Promise<{ row: DataExportRow; created: boolean }> {
  // Loops only if the processing export finished between the conflict and the read.
  for (let attempt = 0; attempt < 3; attempt++) {
    const found = await insertOrFindOnce(knex, row);
    if (found) return found;
  }
  throw new Error("data export: could not insert or find the processing export");
}

async function insertOrFindOnce(
  knex: Knex,
  row: { id: string; user_id: string; requested_at: Date },
): Promise<{ row: DataExportRow; created: boolean } | undefined> {
  const inserted = await knex.raw<{ rows: DataExportRow[] }>(
    `INSERT INTO data_exports (id, user_id, status, requested_at) VALUES (?, ?, 'processing', ?)
     ON CONFLICT (user_id) WHERE status = 'processing' DO NOTHING RETURNING *`,
    [row.id, row.user_id, row.requested_at],
  );
  if (inserted.rows[0]) return { row: inserted.rows[0], created: true };
  const existing = await knex("data_exports").where({ user_id: row.user_id, status: "processing" }).first();
  return existing ? { row: existing as DataExportRow, created: false } : undefined;
}

export async function deleteExport(knex: Knex, id: string): Promise<void> {
  await knex("data_exports").where({ id }).delete();
}

export async function findExport(knex: Knex, id: string): Promise<DataExportRow | undefined> {
  return knex("data_exports").where({ id }).first();
}

/** The export of a live account, ready for download. */
export async function findReadyExport(knex: Knex, id: string): Promise<DataExportRow | undefined> {
  return knex("data_exports as e")
    .join("users as u", "u.id", "e.user_id")
    .where({ "e.id": id, "e.status": "ready" })
    .whereNull("u.deleted_at")
    .whereNotNull("e.archive")
    .first("e.*");
}

export async function completeExport(knex: Knex, id: string, archive: Record<string, unknown>, now: Date): Promise<void> {
  await knex("data_exports")
    .where({ id, status: "processing" })
    .update({ status: "ready", archive: JSON.stringify(archive), completed_at: now, error: null });
}

export async function failExport(knex: Knex, id: string, error: string, now: Date): Promise<void> {
  await knex("data_exports").where({ id, status: "processing" }).update({ status: "failed", error, completed_at: now });
}

/** Drops stored archives finished before `cutoff` (their links have expired). */
export async function purgeExportsCompletedBefore(knex: Knex, cutoff: Date): Promise<number> {
  return knex("data_exports").whereNot({ status: "processing" }).where("completed_at", "<", cutoff).delete();
}

// ---------------------------------------------------------------- archive reads

/** The tables of the database that exist now (areas land their tables over time). */
export async function existingTables(knex: Knex, names: string[]): Promise<Map<string, Set<string>>> {
  const result = await knex.raw<{ rows: { table_name: string; column_name: string }[] }>(
    `SELECT table_name, column_name FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = ANY(?)`,
    [names],
  );
  const tables = new Map<string, Set<string>>();
  for (const { table_name, column_name } of result.rows) {
    if (!tables.has(table_name)) tables.set(table_name, new Set());
    tables.get(table_name)!.add(column_name);
  }
  return tables;
}

/** Rows of `table` whose `column` is one of `values`, oldest first when the table has created_at. */
export async function rowsWhereIn(
  knex: Knex,
  table: string,
  column: string,
  values: string[],
  orderBy: string | undefined,
): Promise<Record<string, unknown>[]> {
  if (values.length === 0) return [];
  const query = knex(table).whereIn(column, values);
  if (orderBy) query.orderBy(orderBy);
  return query.select("*");
}
