import type { Knex } from "knex";

/**
 * Personas, one-to-one conversations and their messages, the monthly usage counters that plan
 * limits are enforced against, and the event outbox that webhooks deliver from.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("personas", (table) => {
    table.uuid("id").primary();
    table.uuid("creator_id").notNullable().references("users.id").onDelete("CASCADE");
    table.text("name").notNullable();
    table.text("description").notNullable().defaultTo("");
    table.text("instructions").notNullable();
    table.text("model").notNullable();
    table.text("avatar_url");
    table.boolean("is_public").notNullable().defaultTo(false);
    table.text("category").notNullable().defaultTo("other");
    table.text("greeting_message");
    table.text("voice_id").notNullable().defaultTo("alloy");
    table.integer("message_count").notNullable().defaultTo(0);
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.timestamp("updated_at", { useTz: true }).notNullable();
    table.index(["creator_id", "created_at"]);
  });
  // Explore reads public personas only, by popularity or recency, and matches q with full text.
  await knex.raw("CREATE INDEX personas_public_popular ON personas (message_count DESC, created_at DESC, id DESC) WHERE is_public");
  await knex.raw("CREATE INDEX personas_public_recent ON personas (created_at DESC, id DESC) WHERE is_public");
  await knex.raw(
    "CREATE INDEX personas_public_text ON personas USING gin (to_tsvector('english', name || ' ' || description)) WHERE is_public",
  );

  await knex.schema.createTable("conversations", (table) => {
    table.uuid("id").primary();
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    table.uuid("persona_id").notNullable().references("personas.id").onDelete("CASCADE");
    table.text("title");
    table.integer("message_count").notNullable().defaultTo(0);
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.timestamp("updated_at", { useTz: true }).notNullable();
    table.index(["user_id", "updated_at"]);
    table.index(["persona_id"]);
  });

  await knex.schema.createTable("messages", (table) => {
    table.uuid("id").primary();
    table.uuid("conversation_id").notNullable().references("conversations.id").onDelete("CASCADE");
    // Denormalised from the conversation: search reads the caller's messages, trending a persona's.
    table.uuid("user_id").notNullable();
    table.uuid("persona_id").notNullable();
    table.text("role").notNullable();
    table.text("content").notNullable();
    // Counted once when stored, so that fitting history into the context budget needs no tokenizer.
    table.integer("content_tokens").notNullable().defaultTo(0);
    table.text("model");
    table.integer("input_tokens");
    table.integer("output_tokens");
    // Knowledge chunks the reply was grounded on: [{chunk_id, document_id, filename, chunk_index, similarity}].
    table.jsonb("citations");
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.index(["conversation_id", "created_at", "id"]);
    table.index(["persona_id", "created_at"]);
  });
  await knex.raw("ALTER TABLE messages ADD CONSTRAINT messages_role CHECK (role IN ('user', 'assistant'))");
  await knex.raw("ALTER TABLE messages ADD COLUMN search tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED");
  await knex.raw("CREATE INDEX messages_search ON messages USING gin (search)");
  await knex.raw("CREATE INDEX messages_user ON messages (user_id, created_at DESC)");

  // One row per user and month: messages counted against the plan's monthly quota.
  await knex.schema.createTable("usage_counters", (table) => {
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    table.date("period_start").notNullable();
    table.integer("messages_sent").notNullable().defaultTo(0);
    table.primary(["user_id", "period_start"]);
  });

  // Events recorded in the same transaction as the change they describe; webhooks deliver from here.
  await knex.schema.createTable("event_outbox", (table) => {
    table.uuid("id").primary();
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    table.text("type").notNullable();
    table.jsonb("data").notNullable();
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.timestamp("dispatched_at", { useTz: true });
    table.index(["dispatched_at", "created_at"]);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const name of ["event_outbox", "usage_counters", "messages", "conversations", "personas"]) {
    await knex.schema.dropTable(name);
  }
}
