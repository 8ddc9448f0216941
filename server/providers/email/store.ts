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
