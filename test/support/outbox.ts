import { outboxMailText } from "../../server/toolkit/providers/email/sealing.ts";
import type { TestService } from "./service.ts";

/** A mail of the e-mail outbox, its text opened (null once an SMTP server took it). */
export interface OutboxMail {
  id: string;
  to: string;
  subject: string;
  kind: string;
  text: string | null;
  created_at: Date;
  sent_at: Date | null;
}

/**
 * The outbox's mails matching `where`, oldest first, with their text opened: the outbox keeps a
 * mail's text sealed (issue 31 M3), so a test reads it as `persona mail show` does.
 */
export async function outboxMails(service: TestService, where: { to?: string; kind?: string } = {}): Promise<OutboxMail[]> {
  const { knex } = service.services.db;
  const rows = await knex("email_outbox").where(where).orderBy([{ column: "created_at", order: "asc" }, { column: "id", order: "asc" }]);
  const key = service.services.config.secretsKey;
  return Promise.all(
    rows.map(async (row: OutboxMail & { text_sealed: string | null }) => {
      const { text_sealed: _sealed, ...mail } = row;
      return { ...mail, text: await outboxMailText(knex, key, row) };
    }),
  );
}
