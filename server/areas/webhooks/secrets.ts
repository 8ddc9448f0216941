import { randomBytes } from "node:crypto";
import type { Knex } from "knex";
import { secretBox as instanceBox, type SecretBox } from "../../toolkit/db/secret-box.ts";

// Webhook secrets are needed in the clear to sign every delivery, so they are encrypted (not hashed)
// at rest, in the installation's secret box (server/toolkit/db/secret-box.ts).

/** The box's purpose for webhook secrets and bot tokens; fixed: it derives the key of every stored one. */
const PURPOSE = "persona webhook secrets v1";

/** A new secret as Standard Webhooks writes them: `whsec_` + base64 of 24 random bytes. */
export function generateSecret(): string {
  return `whsec_${randomBytes(24).toString("base64")}`;
}

/** This installation's box for webhook secrets: SECRETS_KEY, else the key kept in the database. */
export function secretBox(knex: Knex, configured: string | undefined): Promise<SecretBox> {
  return instanceBox(knex, configured, PURPOSE);
}
