import type { Knex } from "knex";

/**
 * The embeddable persona (issue 36, item 3; docs/design/embeds.md): a persona's embed settings
 * (enabled, the origins that may embed it, the visitors' daily message cap); the anonymous visitors
 * of an embedded persona, each known by the hash of its guest token; which conversations of the
 * owner are a visitor's; and the visitors' messages per persona and day, for the daily cap.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("persona_embeds", (table) => {
    table.uuid("persona_id").primary().references("personas.id").onDelete("CASCADE");
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    table.boolean("enabled").notNullable().defaultTo(false);
    table.specificType("allowed_origins", "text[]").notNullable().defaultTo("{}");
    table.integer("daily_message_cap").notNullable();
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.timestamp("updated_at", { useTz: true }).notNullable();
  });
  await knex.raw("CREATE INDEX persona_embeds_user ON persona_embeds (user_id)");

  await knex.schema.createTable("embed_guests", (table) => {
    table.uuid("id").primary();
    table.uuid("persona_id").notNullable().references("personas.id").onDelete("CASCADE");
    table.text("token_hash").notNullable().unique();
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.timestamp("last_seen_at", { useTz: true }).notNullable();
  });
  await knex.raw("CREATE INDEX embed_guests_seen ON embed_guests (last_seen_at)");

  await knex.schema.createTable("embed_conversations", (table) => {
    table.uuid("conversation_id").primary().references("conversations.id").onDelete("CASCADE");
    table.uuid("persona_id").notNullable().references("personas.id").onDelete("CASCADE");
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    // The visitor outlives neither its 90 unseen days nor its persona; the conversation stays the owner's.
    table.uuid("guest_id").references("embed_guests.id").onDelete("SET NULL");
    table.integer("visitor_messages").notNullable().defaultTo(0);
    table.timestamp("started_at", { useTz: true }).notNullable();
    table.timestamp("last_message_at", { useTz: true });
  });
  // One conversation per visitor at a time: two first messages at once cannot make two.
  await knex.raw("CREATE UNIQUE INDEX embed_conversations_guest ON embed_conversations (guest_id)");
  await knex.raw("CREATE INDEX embed_conversations_persona ON embed_conversations (persona_id, started_at DESC, conversation_id DESC)");
  await knex.raw("CREATE INDEX embed_conversations_user ON embed_conversations (user_id)");

  await knex.schema.createTable("embed_daily_usage", (table) => {
    table.uuid("persona_id").notNullable().references("personas.id").onDelete("CASCADE");
    table.date("day").notNullable();
    // Visitor messages the persona has taken of its cap that day.
    table.integer("sent").notNullable().defaultTo(0);
    table.primary(["persona_id", "day"]);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable("embed_daily_usage");
  await knex.schema.dropTable("embed_conversations");
  await knex.schema.dropTable("embed_guests");
  await knex.schema.dropTable("persona_embeds");
}
