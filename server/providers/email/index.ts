import type { Knex } from "knex";
import { v7 as uuidv7 } from "uuid";
import type { Logger } from "../../logger.ts";
import { keepOutboxMail, markOutboxMailSent } from "./store.ts";
import type { EmailProvider } from "./types.ts";

export type { EmailProvider, Mail } from "./types.ts";

/**
 * SMTP through nodemailer when `SMTP_URL` is set; otherwise the offline default: the outbox table
 * and a log line, so a developer can read verification links without a mail server.
 */
export async function createEmailProvider(options: { smtpUrl: string | undefined; from: string }, knex: Knex, log: Logger): Promise<EmailProvider> {
  const smtp = options.smtpUrl ? new (await import("./smtp.ts")).SmtpMailer(options.smtpUrl, options.from) : undefined;
  return {
    kind: smtp ? "smtp" : "outbox",
    send: async (mail) => {
      const id = mail.id ?? uuidv7();
      const { sent } = await keepOutboxMail(knex, { id, to: mail.to, subject: mail.subject, text: mail.text, kind: mail.kind, created_at: new Date() });
      if (sent) return;
      if (smtp) {
        const { id: _id, ...message } = mail;
        await smtp.send(message);
        await markOutboxMailSent(knex, id, new Date());
        log.info({ kind: mail.kind, id }, "e-mail sent");
      } else {
        log.info({ kind: mail.kind, id, subject: mail.subject }, "e-mail written to the outbox (no SMTP_URL)");
      }
    },
  };
}
