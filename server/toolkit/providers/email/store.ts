import type { Knex } from "knex";

/** A kept mail as stored: its text sealed (`text_sealed`), or in the clear in rows from before issue 31. */
export interface OutboxRow {
  id: string;
  to: string;
  subject: string;
  kind: string;
  text: string | null;
  text_sealed: string | null;
  created_at: Date;
  sent_at: Date | null;
}

/** Keeps the mail once: a retry with the same id finds the row it kept before. */
export async function keepOutboxMail(
  knex: Knex,
  row: { id: string; to: string; subject: string; text_sealed: string; kind: string; created_at: Date },
): Promise<void> {
  await knex("email_outbox").insert(row).onConflict("id").ignore();
}

export async function findOutboxMail(knex: Knex, id: string): Promise<OutboxRow | undefined> {
  return knex("email_outbox").where({ id }).first();
}

/** Marks the mail sent and drops its text: the mail left, and its links are the recipient's alone. */
export async function markOutboxMailSent(knex: Knex, id: string, at: Date): Promise<void> {
  await knex("email_outbox").where({ id }).update({ sent_at: at, text_sealed: null, text: null });
}

/**
 * Mails SMTP delivered are only a log once sent, and they carry single-use links: kept a day. Mails
 * of the outbox mode (never sent) are the only copy an administrator reads: kept 30 days.
 */
export async function purgeOutbox(knex: Knex, now: Date): Promise<number> {
  const day = 24 * 60 * 60 * 1000;
  return knex("email_outbox")
    .where((old) => old.where("sent_at", "<", new Date(now.getTime() - day)).orWhere("created_at", "<", new Date(now.getTime() - 30 * day)))
    .delete();
}

/** Kept mails without their text, newest first. */
export async function listOutboxMails(
  knex: Knex,
  filter: { to?: string | undefined; kind?: string | undefined; limit: number },
): Promise<Omit<OutboxRow, "text" | "text_sealed">[]> {
  const query = knex("email_outbox")
    .select("id", "to", "subject", "kind", "created_at", "sent_at")
    .orderBy([{ column: "created_at", order: "desc" }, { column: "id", order: "desc" }])
    .limit(filter.limit);
  if (filter.to) query.whereRaw("lower(??) = lower(?)", ["to", filter.to]);
  if (filter.kind) query.where({ kind: filter.kind });
  return query;
}
