import type { Knex } from "knex";

/**
 * Room replies are priced like conversation replies (issue 40, docs/adr/0375): a persona's room
 * message records the registry model that answered, the one that failed before it when a fallback
 * answered, whether it ran on a user's own key, its cost in nano-USD, and whom it is billed to: the
 * member whose post it answers, whose quota it counted against. No foreign key: every reference to
 * `users` cascades, and a purged member's replies stay in the room; the rooms area's purge clears
 * the column instead (the cost stays in the persona's and the platform's sums, under no one). The columns
 * are nullable or have a constant default: adding them rewrites no table. Two partial indexes serve
 * the sums per member and per persona over a period.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable("room_messages", (table) => {
    table.text("model_id");
    table.text("fallback_from");
    table.boolean("own_key").notNullable().defaultTo(false);
    table.bigInteger("cost_nanos");
    table.uuid("billed_user_id");
  });
  await knex.raw("CREATE INDEX room_messages_billed ON room_messages (billed_user_id, created_at) WHERE billed_user_id IS NOT NULL");
  await knex.raw("CREATE INDEX room_messages_persona_replies ON room_messages (persona_id, created_at) WHERE persona_id IS NOT NULL");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("DROP INDEX room_messages_persona_replies");
  await knex.raw("DROP INDEX room_messages_billed");
  await knex.schema.alterTable("room_messages", (table) => {
    table.dropColumn("billed_user_id");
    table.dropColumn("cost_nanos");
    table.dropColumn("own_key");
    table.dropColumn("fallback_from");
    table.dropColumn("model_id");
  });
}
