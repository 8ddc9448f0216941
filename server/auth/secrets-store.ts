import type { Knex } from "knex";

/** Inserts the secret unless one of that name exists, then answers the one stored. */
export async function insertOrReadSecret(knex: Knex, name: string, value: string): Promise<string> {
  await knex("instance_secrets").insert({ name, value }).onConflict("name").ignore();
  const row = await knex("instance_secrets").where({ name }).first<{ value: string }>();
  return row!.value;
}
