import { randomBytes } from "node:crypto";
import type { Knex } from "knex";

/**
 * A secret of this installation: the configured value, else one generated on first use and kept in
 * the database, so every process on the database (and every restart) shares it. On the embedded
 * default the database lives in the data directory, so the secret does too.
 */
export async function instanceSecret(knex: Knex, name: string, configured: string | undefined): Promise<string> {
  if (configured) return configured;
  await knex("instance_secrets").insert({ name, value: randomBytes(32).toString("base64url") }).onConflict("name").ignore();
  const row = await knex("instance_secrets").where({ name }).first<{ value: string }>();
  return row!.value;
}
