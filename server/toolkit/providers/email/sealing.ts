import type { Knex } from "knex";
import { secretBox, type SecretBox } from "../../db/secret-box.ts";

// Issue 31 M3: a mail's text carries single-use tokens and download links, so the outbox keeps it
// sealed in the installation's secret box, and only until an SMTP server took it.

/** The secret box's purpose for outbox mails; fixed: it derives the key of every sealed one. */
const PURPOSE = "persona e-mail outbox v1";

/** This installation's box for outbox mails: SECRETS_KEY, else the key kept in the database. */
export function outboxBox(knex: Knex, secretsKey: string | undefined): Promise<SecretBox> {
  return secretBox(knex, secretsKey, PURPOSE);
}

/**
 * The text of a kept mail, for the admin CLI (`persona mail show`): opened from its seal; in the
 * clear in a row from before issue 31; null once an SMTP server took the mail.
 */
export async function outboxMailText(knex: Knex, secretsKey: string | undefined, row: { text: string | null; text_sealed: string | null }): Promise<string | null> {
  if (row.text_sealed) return (await outboxBox(knex, secretsKey)).open(row.text_sealed);
  return row.text;
}
