import type { Knex } from "knex";

export async function insertOutboxMail(
  knex: Knex,
  row: { id: string; to: string; subject: string; text: string; kind: string; created_at: Date },
): Promise<void> {
  await knex("email_outbox").insert(row);
}

export async function markOutboxMailSent(knex: Knex, id: string, at: Date): Promise<void> {
  await knex("email_outbox").where({ id }).update({ sent_at: at });
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
