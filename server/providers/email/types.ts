export interface Mail {
  to: string;
  subject: string;
  text: string;
  /** What the mail is for (verify_email, reset_password, data_export, ...), for the outbox and logs. */
  kind: string;
  /** Its outbox id; a retry of the same mail gives the same id, so it is kept once and sent once. */
  id?: string;
}

/** Sends e-mail. Every mail is also kept in the `email_outbox` table (the admin CLI lists it). */
export interface EmailProvider {
  send: (mail: Mail) => Promise<void>;
  kind: "smtp" | "outbox";
}
