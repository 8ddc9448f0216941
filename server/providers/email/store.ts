import type { Knex } from "knex";

/** Keeps the mail (once: a retry with the same id finds it) and answers whether it was sent already. */
export async function keepOutboxMail(
  knex: Knex,
  row: { id: string; to: string; subject: string; text: string; kind: string; created_at: Date },
): Promise<{ sent: boolean }> {
  await knex("email_outbox").insert(row).onConflict("id").ignore();
  const kept = await knex("email_outbox").where({ id: row.id }).first("sent_at");
  return { sent: Boolean(kept?.sent_at) };
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
