import type { Knex } from "knex";
import { v7 as uuidv7 } from "uuid";
import type { Logger } from "../../logger.ts";
import { outboxBox, outboxMailText } from "./sealing.ts";
import { findOutboxMail, keepOutboxMail, markOutboxMailSent } from "./store.ts";
import type { EmailProvider } from "./types.ts";

export type { EmailProvider, Mail } from "./types.ts";

/**
 * SMTP through nodemailer when `SMTP_URL` is set; otherwise the offline default: the outbox table
 * and a log line, so a developer can read verification links (`persona mail show`) without a mail
 * server. Either way a mail is kept in the outbox first, its text sealed (issue 31 M3).
 */
export async function createEmailProvider(
  options: { smtpUrl: string | undefined; from: string; secretsKey: string | undefined },
  knex: Knex,
  log: Logger,
): Promise<EmailProvider> {
  const smtp = options.smtpUrl ? new (await import("./smtp.ts")).SmtpMailer(options.smtpUrl, options.from) : undefined;
  const keep: EmailProvider["keep"] = async (mail) => {
    const id = mail.id ?? uuidv7();
    const sealed = (await outboxBox(knex, options.secretsKey)).seal(mail.text);
    await keepOutboxMail(knex, { id, to: mail.to, subject: mail.subject, text_sealed: sealed, kind: mail.kind, created_at: new Date() });
    return id;
  };
  const deliver: EmailProvider["deliver"] = async (id) => {
    const row = await findOutboxMail(knex, id);
    // Purged (sent long ago) or sent already: nothing left to do.
    if (!row || row.sent_at) return;
    if (!smtp) {
      log.info({ kind: row.kind, id, subject: row.subject }, "e-mail written to the outbox (no SMTP_URL)");
      return;
    }
    const text = await outboxMailText(knex, options.secretsKey, row);
    if (text === null) return;
    await smtp.send({ to: row.to, subject: row.subject, text });
    await markOutboxMailSent(knex, id, new Date());
    log.info({ kind: row.kind, id }, "e-mail sent");
  };
  return {
    kind: smtp ? "smtp" : "outbox",
    keep,
    deliver,
    send: async (mail) => deliver(await keep(mail)),
  };
}
