import type { Knex } from "knex";

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

// ---------------------------------------------------------------- exports

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

// ---------------------------------------------------------------- e-mail tokens (only hashes)

export async function insertEmailToken(
  knex: Knex,
  row: { token_hash: string; user_id: string; purpose: string; created_at: Date; expires_at: Date },
): Promise<void> {
  await knex("email_tokens").insert(row);
}

/**
 * Inserts a token for whoever has this e-mail, in one statement that runs whether or not anyone
 * does: the caller (forgot-password) must cost the same for a registered and an unknown address.
 */
export async function insertEmailTokenByEmail(
  knex: Knex,
  email: string,
  row: { token_hash: string; purpose: string; created_at: Date; expires_at: Date },
): Promise<{ user_id: string; email: string } | undefined> {
  const result = await knex.raw<{ rows: { user_id: string; email: string }[] }>(
    `INSERT INTO email_tokens (token_hash, user_id, purpose, created_at, expires_at)
     SELECT ?, u.id, ?, ?, ? FROM users u WHERE lower(u.email) = lower(?) AND u.deleted_at IS NULL
     RETURNING user_id, (SELECT email FROM users WHERE id = user_id) AS email`,
    [row.token_hash, row.purpose, row.created_at, row.expires_at, email],
  );
  return result.rows[0];
}

/**
 * Marks the token used and returns its owner, or undefined when it is unknown, of another purpose,
 * used, expired, or (with `userId`) someone else's. One UPDATE: of two concurrent uses exactly one wins.
 */
export async function consumeEmailTokenRow(
  knex: Knex,
  tokenHash: string,
  purpose: string,
  now: Date,
  userId?: string,
): Promise<string | undefined> {
  const query = knex("email_tokens").where({ token_hash: tokenHash, purpose }).whereNull("used_at").where("expires_at", ">", now);
  if (userId) query.where({ user_id: userId });
  const [row] = (await query.update({ used_at: now }).returning("user_id")) as { user_id: string }[];
  return row?.user_id;
}

/** The token's use and expiry, or undefined when no token of the purpose has this hash. */
export async function findEmailTokenRow(knex: Knex, tokenHash: string, purpose: string): Promise<{ used_at: Date | null; expires_at: Date } | undefined> {
  return knex("email_tokens").where({ token_hash: tokenHash, purpose }).first("used_at", "expires_at");
}

/** Spends every outstanding token of the user for the purpose. */
export async function spendEmailTokenRows(knex: Knex, userId: string, purpose: string, now: Date): Promise<void> {
  await knex("email_tokens").where({ user_id: userId, purpose }).whereNull("used_at").update({ used_at: now });
}
