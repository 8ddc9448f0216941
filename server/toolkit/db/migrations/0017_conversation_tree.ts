import type { Knex } from "knex";

/**
 * Conversations become trees (issue 21): a message names its parent (the previous message on its
 * path) and its depth on that path; the conversation names its active leaf. Regenerated replies
 * and edited messages are siblings, so nothing is ever deleted to branch. Existing conversations
 * become one straight path in creation order. Rolling summaries of a path's prefix (long-chat
 * memory) are keyed by the last message they cover, so each branch reads the summary of its own
 * prefix.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable("messages", (table) => {
    table.uuid("parent_id").references("messages.id").onDelete("CASCADE");
    // 1 for the first message; equals the active path's length at the leaf, so counts need no walk.
    table.integer("depth").notNullable().defaultTo(1);
    table.index(["conversation_id", "parent_id"]);
  });
  await knex.raw(`
    UPDATE messages m SET parent_id = o.parent_id, depth = o.depth
    FROM (SELECT id,
                 lag(id) OVER (PARTITION BY conversation_id ORDER BY created_at, id) AS parent_id,
                 row_number() OVER (PARTITION BY conversation_id ORDER BY created_at, id)::int AS depth
          FROM messages) o
    WHERE o.id = m.id`);
  await knex.schema.alterTable("conversations", (table) => {
    // No foreign key: the messages cascade with their conversation, and a cycle would order the deletes.
    table.uuid("active_message_id");
    // Held while a regeneration or an edit is answered, so that a second one is a 409 (see chat control decisions).
    table.timestamp("reply_lease_until", { useTz: true });
  });
  await knex.raw(`
    UPDATE conversations c SET active_message_id = l.id
    FROM (SELECT DISTINCT ON (conversation_id) conversation_id, id FROM messages ORDER BY conversation_id, created_at DESC, id DESC) l
    WHERE l.conversation_id = c.id`);

  await knex.schema.createTable("conversation_summaries", (table) => {
    table.uuid("conversation_id").notNullable().references("conversations.id").onDelete("CASCADE");
    // The last message the summary covers; it summarises the path from the first message to here.
    table.uuid("through_message_id").notNullable().references("messages.id").onDelete("CASCADE");
    table.integer("through_depth").notNullable();
    table.text("content").notNullable();
    table.integer("content_tokens").notNullable();
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.primary(["conversation_id", "through_message_id"]);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable("conversation_summaries");
  await knex.schema.alterTable("conversations", (table) => {
    table.dropColumn("reply_lease_until");
    table.dropColumn("active_message_id");
  });
  await knex.schema.alterTable("messages", (table) => {
    table.dropIndex(["conversation_id", "parent_id"]);
    table.dropColumn("depth");
    table.dropColumn("parent_id");
  });
}
