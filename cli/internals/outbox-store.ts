import type { Knex } from "knex";

/**
 * Reading the e-mail outbox (`email_outbox`, written by server/toolkit/providers/email). Only the admin
 * CLI reads it; there is no API endpoint for it.
 */
export interface OutboxMail {
  id: string;
  to: string;
  subject: string;
  kind: string;
  created_at: string;
  sent_at: string | null;
}

export interface OutboxMailDetail extends OutboxMail {
  text: string;
}

interface Row {
  id: string;
  to: string;
  subject: string;
  kind: string;
  text?: string | null;
  text_sealed?: string | null;
  created_at: Date;
  sent_at: Date | null;
}

const iso = (value: Date | null) => (value ? new Date(value).toISOString() : null);

function summary(row: Row): OutboxMail {
  return { id: row.id, to: row.to, subject: row.subject, kind: row.kind, created_at: iso(row.created_at)!, sent_at: iso(row.sent_at) };
}

/** Newest first; `to` matches the address case-insensitively. */
export async function listOutbox(knex: Knex, filter: { to?: string; kind?: string; limit: number }): Promise<OutboxMail[]> {
  const query = knex<Row>("email_outbox")
    .select("id", "to", "subject", "kind", "created_at", "sent_at")
    .orderBy([{ column: "created_at", order: "desc" }, { column: "id", order: "desc" }])
    .limit(filter.limit);
  if (filter.to) query.whereRaw("lower(??) = lower(?)", ["to", filter.to]);
  if (filter.kind) query.where({ kind: filter.kind });
  const rows = (await query) as Row[];
  return rows.map(summary);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * One mail with its text, opened with the server's secrets key (SECRETS_KEY, else the one kept in
 * the database): the outbox keeps a mail's text sealed, and drops it once an SMTP server took the
 * mail (issue 31 M3).
 */
export async function findOutboxMail(knex: Knex, id: string): Promise<OutboxMailDetail | undefined> {
  // The column is a uuid: anything else would be a SQL error rather than "not found".
  if (!UUID.test(id)) return undefined;
  const row = (await knex<Row>("email_outbox").where({ id }).first()) as Row | undefined;
  if (!row) return undefined;
  const [{ loadConfig }, { outboxMailText }] = await Promise.all([import("../../server/toolkit/config.ts"), import("../../server/toolkit/providers/email/sealing.ts")]);
  const text = await outboxMailText(knex, loadConfig().secretsKey, { text: row.text ?? null, text_sealed: row.text_sealed ?? null });
  return { ...summary(row), text: text ?? "(the text was dropped once the mail was sent)" };
}
