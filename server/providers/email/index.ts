import type { Knex } from "knex";
import { v7 as uuidv7 } from "uuid";
import type { Logger } from "../../logger.ts";
import { SmtpMailer } from "./smtp.ts";

export interface Mail {
  to: string;
  subject: string;
  text: string;
  /** What the mail is for (verify_email, reset_password, data_export, ...), for the outbox and logs. */
  kind: string;
}

/** Sends e-mail. Every mail is also kept in the `email_outbox` table (the admin CLI lists it). */
export interface Mailer {
  send: (mail: Mail) => Promise<void>;
  kind: "smtp" | "outbox";
}

/**
 * SMTP through nodemailer when `SMTP_URL` is set; otherwise the offline default: the outbox table
 * and a log line, so a developer can read verification links without a mail server.
 */
export function createMailer(options: { smtpUrl: string | undefined; from: string }, knex: Knex, log: Logger): Mailer {
  const smtp = options.smtpUrl ? new SmtpMailer(options.smtpUrl, options.from) : undefined;
  return {
    kind: smtp ? "smtp" : "outbox",
    send: async (mail) => {
      const id = uuidv7();
      await knex("email_outbox").insert({ id, to: mail.to, subject: mail.subject, text: mail.text, kind: mail.kind, created_at: new Date() });
      if (smtp) {
        await smtp.send(mail);
        await knex("email_outbox").where({ id }).update({ sent_at: new Date() });
        log.info({ kind: mail.kind, id }, "e-mail sent");
      } else {
        log.info({ kind: mail.kind, id, subject: mail.subject }, "e-mail written to the outbox (no SMTP_URL)");
      }
    },
  };
}
