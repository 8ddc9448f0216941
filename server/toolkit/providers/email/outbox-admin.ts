import type { Services } from "../../services.ts";
import { outboxMailText } from "./sealing.ts";
import { findOutboxMail, listOutboxMails, type OutboxRow } from "./store.ts";

// Reading the e-mail outbox for the operator (`persona mail`): no API endpoint exposes it.

export interface OutboxMail {
  id: string;
  to: string;
  subject: string;
  kind: string;
  created_at: string;
  sent_at: string | null;
}

export interface OutboxMailDetail extends OutboxMail {
  /** The mail's text, or null once an SMTP server took the mail (its text is dropped then). */
  text: string | null;
}

const iso = (value: Date | null) => (value ? new Date(value).toISOString() : null);

function summary(row: Pick<OutboxRow, "id" | "to" | "subject" | "kind" | "created_at" | "sent_at">): OutboxMail {
  return { id: row.id, to: row.to, subject: row.subject, kind: row.kind, created_at: iso(row.created_at)!, sent_at: iso(row.sent_at) };
}

/** Newest first; `to` matches the address in any letter case. */
export async function listOutbox(services: Pick<Services, "db">, filter: { to?: string | undefined; kind?: string | undefined; limit: number }): Promise<OutboxMail[]> {
  return (await listOutboxMails(services.db.knex, filter)).map(summary);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** One mail with its text opened from its seal (issue 31 M3); undefined when there is none. */
export async function readOutboxMail(services: Pick<Services, "db" | "config">, id: string): Promise<OutboxMailDetail | undefined> {
  // The column is a uuid: anything else would be a SQL error rather than "not found".
  if (!UUID.test(id)) return undefined;
  const row = await findOutboxMail(services.db.knex, id);
  if (!row) return undefined;
  return { ...summary(row), text: await outboxMailText(services.db.knex, services.config.secretsKey, row) };
}
