import type { Knex } from "knex";

/**
 * Issue 34 item 8: an account deleted by mistake can be restored during its grace period, and with
 * it the API keys that its deletion revoked, and only those. `revoked_with_account` marks a key that
 * the deletion revoked (a key revoked before, by its owner or a password reset, stays revoked).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable("api_keys", (table) => {
    table.boolean("revoked_with_account").notNullable().defaultTo(false);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable("api_keys", (table) => {
    table.dropColumn("revoked_with_account");
  });
}
