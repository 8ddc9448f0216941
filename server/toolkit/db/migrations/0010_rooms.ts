import type { Knex } from "knex";

/**
 * Group rooms: the room, its members (one owner), its personas (with who added each, since a member
 * may take out only the ones it added) and its messages. Every user reference cascades, so the
 * purge removes a user's rooms, memberships and own messages. A persona's messages keep the
 * persona's id and name without a foreign key: they stay in the room when the persona goes.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("rooms", (table) => {
    table.uuid("id").primary();
    table.uuid("owner_id").notNullable().references("users.id").onDelete("CASCADE");
    table.text("name").notNullable();
    table.text("description").notNullable().defaultTo("");
    table.boolean("is_public").notNullable().defaultTo(false);
    table.text("reply_mode").notNullable().defaultTo("natural");
    table.timestamp("last_message_at", { useTz: true });
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.timestamp("updated_at", { useTz: true }).notNullable();
    table.index(["owner_id"]);
  });
  await knex.raw("ALTER TABLE rooms ADD CONSTRAINT rooms_reply_mode CHECK (reply_mode IN ('natural', 'mentions_only', 'all'))");
  await knex.schema.createTable("room_members", (table) => {
    table.uuid("room_id").notNullable().references("rooms.id").onDelete("CASCADE");
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    table.text("role").notNullable();
    table.timestamp("joined_at", { useTz: true }).notNullable();
    // Order of joining when several join in the same instant.
    table.specificType("seq", "bigserial");
    table.primary(["room_id", "user_id"]);
    table.index(["user_id"]);
  });
  await knex.raw("ALTER TABLE room_members ADD CONSTRAINT room_members_role CHECK (role IN ('owner', 'member'))");
  await knex.schema.createTable("room_personas", (table) => {
    table.uuid("room_id").notNullable().references("rooms.id").onDelete("CASCADE");
    table.uuid("persona_id").notNullable().references("personas.id").onDelete("CASCADE");
    table.uuid("added_by").notNullable().references("users.id").onDelete("CASCADE");
    table.timestamp("added_at", { useTz: true }).notNullable();
    // Order of adding: a room created with several personas adds them in the same instant.
    table.specificType("seq", "bigserial");
    table.primary(["room_id", "persona_id"]);
    table.index(["persona_id"]);
  });
  await knex.schema.createTable("room_messages", (table) => {
    table.uuid("id").primary();
    table.uuid("room_id").notNullable().references("rooms.id").onDelete("CASCADE");
    table.text("sender_type").notNullable();
    // The author: a user (cascading), or a persona by id and name at the time of writing.
    table.uuid("user_id").references("users.id").onDelete("CASCADE");
    table.uuid("persona_id");
    table.text("persona_name");
    table.text("content").notNullable();
    table.integer("content_tokens").notNullable();
    table.text("model");
    table.integer("input_tokens");
    table.integer("output_tokens");
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.index(["user_id"]);
  });
  await knex.raw(
    `ALTER TABLE room_messages ADD CONSTRAINT room_messages_sender CHECK (
       (sender_type = 'user' AND user_id IS NOT NULL AND persona_id IS NULL)
       OR (sender_type = 'persona' AND user_id IS NULL AND persona_id IS NOT NULL AND persona_name IS NOT NULL))`,
  );
  // History newest first; the id breaks ties between equal timestamps.
  await knex.raw("CREATE INDEX room_messages_history ON room_messages (room_id, created_at DESC, id DESC)");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable("room_messages");
  await knex.schema.dropTable("room_personas");
  await knex.schema.dropTable("room_members");
  await knex.schema.dropTable("rooms");
}
