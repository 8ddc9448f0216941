import type { Knex } from "knex";

/**
 * The OpenAI-compatible endpoint (issue 22): the persona setting that lets its owner refuse the
 * `system` messages a client adds after the persona's instructions. Allowed by default, since
 * chat front-ends send their own system prompt with every request.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable("personas", (table) => {
    table.boolean("allow_client_system_messages").notNullable().defaultTo(true);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable("personas", (table) => {
    table.dropColumn("allow_client_system_messages");
  });
}
