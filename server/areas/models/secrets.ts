import type { Knex } from "knex";
import { secretBox, type SecretBox } from "../../toolkit/db/secret-box.ts";

// A provider connection's key is sent with every reply on it, so it is encrypted (not hashed) at
// rest in the installation's secret box, under a key of its own purpose.

/** The box's purpose for users' provider keys; fixed: it derives the key of every stored one. */
const PURPOSE = "persona provider connection keys v1";

export function keyBox(knex: Knex, configured: string | undefined): Promise<SecretBox> {
  return secretBox(knex, configured, PURPOSE);
}

/** What a connection shows of its key: `…` and the last 4 characters (none of a short key). */
export function keyHint(key: string): string {
  return key.length >= 12 ? `…${key.slice(-4)}` : "…";
}
