export interface Mail {
  to: string;
  subject: string;
  text: string;
  /** What the mail is for (verify_email, reset_password, data_export, ...), for the outbox and logs. */
  kind: string;
  /** Its outbox id; a retry of the same mail gives the same id, so it is kept once and sent once. */
  id?: string;
}

/**
 * Sends e-mail. Every mail is first kept in the `email_outbox` table (the admin CLI lists it), its
 * text sealed (issue 31 M3: mails carry single-use tokens and download links). A job that sends a
 * mail carries its outbox id, never its text.
 */
export interface EmailProvider {
  /** Keeps the mail in the outbox (once per id) and answers its id; nothing is sent yet. */
  keep: (mail: Mail) => Promise<string>;
  /**
   * Sends a kept mail unless it was sent already, then drops its text: a throw means "not sent", to
   * be retried. Without SMTP the outbox row is the delivery, and this only logs it.
   */
  deliver: (id: string) => Promise<void>;
  /** `keep`, then `deliver`: for a caller that is a job already, whose own retries send it once. */
  send: (mail: Mail) => Promise<void>;
  kind: "smtp" | "outbox";
}
