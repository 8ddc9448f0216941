import type { Knex } from "knex";

/**
 * A room's live events (messages, members and personas coming and going), kept for the replay
 * window so that a subscriber reconnecting with `Last-Event-ID` misses nothing. The id is the SSE
 * id and the replay cursor; writers lock the room's row before inserting, so within a room ids
 * commit in increasing order. `message_id` and `user_id` cascade: deleting a message or purging
 * an account takes its events with it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("room_events", (table) => {
    table.specificType("id", "bigint GENERATED ALWAYS AS IDENTITY").primary();
    table.uuid("room_id").notNullable().references("rooms.id").onDelete("CASCADE");
    table.text("type").notNullable();
    // The event's data as the contract shows it, rendered when the event happened.
    table.jsonb("data").notNullable();
    table.uuid("message_id").references("room_messages.id").onDelete("CASCADE");
    // The user the event is about (author, member joining or leaving).
    table.uuid("user_id").references("users.id").onDelete("CASCADE");
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.index(["message_id"]);
    table.index(["user_id"]);
    table.index(["created_at"]);
  });
  await knex.raw(
    "ALTER TABLE room_events ADD CONSTRAINT room_events_type CHECK (type IN ('message', 'member_joined', 'member_left', 'persona_added', 'persona_removed'))",
  );
  // Replay and fan-out read one room's events after a cursor.
  await knex.raw("CREATE INDEX room_events_replay ON room_events (room_id, id)");
  // Who spoke last, read on every send that names no persona: one probe per persona of the room.
  await knex.raw("CREATE INDEX room_messages_persona_spoken ON room_messages (room_id, persona_id, created_at DESC) WHERE persona_id IS NOT NULL");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("DROP INDEX room_messages_persona_spoken");
  await knex.schema.dropTable("room_events");
}
