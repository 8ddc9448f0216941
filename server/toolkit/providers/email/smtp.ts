import nodemailer, { type Transporter } from "nodemailer";
import type { Mail } from "./types.ts";

/** The real provider: any SMTP server, from an `smtp://` or `smtps://` URL. */
export class SmtpMailer {
  readonly #transport: Transporter;
  readonly #from: string;

  constructor(url: string, from: string) {
    this.#transport = nodemailer.createTransport(url);
    this.#from = from;
  }

  async send(mail: Pick<Mail, "to" | "subject" | "text">): Promise<void> {
    await this.#transport.sendMail({ from: this.#from, to: mail.to, subject: mail.subject, text: mail.text });
  }
}
