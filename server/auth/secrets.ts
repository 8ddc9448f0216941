import { randomBytes } from "node:crypto";
import type { Knex } from "knex";
import { insertOrReadSecret } from "./secrets-store.ts";

/**
 * A secret of this installation: the configured value, else one generated on first use and kept in
 * the database, so every process on the database (and every restart) shares it. On the embedded
 * default the database lives in the data directory, so the secret does too.
 */
export async function instanceSecret(knex: Knex, name: string, configured: string | undefined): Promise<string> {
  if (configured) return configured;
  return insertOrReadSecret(knex, name, randomBytes(32).toString("base64url"));
}
