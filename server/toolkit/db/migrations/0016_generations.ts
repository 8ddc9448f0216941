import type { Knex } from "knex";

/**
 * Chat control, streaming half (issue 21): a streamed reply is a generation that outlives its HTTP
 * request. `generations` holds its state; `generation_events` the events a client may resume from
 * (`Last-Event-ID` is their `seq`). Messages say when a reply was stopped, and conversations carry
 * the token totals of their replies (backfilled from the messages already stored).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("generations", (table) => {
    table.uuid("id").primary();
    table.uuid("conversation_id").notNullable().references("conversations.id").onDelete("CASCADE");
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    table.text("status").notNullable();
    // Known once the engine has stored them; no foreign key, so a message deleted later leaves the record.
    table.uuid("user_message_id");
    table.uuid("reply_message_id");
    table.jsonb("error");
    table.timestamp("started_at", { useTz: true }).notNullable();
    table.timestamp("finished_at", { useTz: true });
  });
  await knex.raw("ALTER TABLE generations ADD CONSTRAINT generations_status CHECK (status IN ('running', 'done', 'stopped', 'failed'))");
  await knex.raw("CREATE INDEX generations_conversation ON generations (conversation_id, started_at DESC)");
  await knex.raw("CREATE INDEX generations_running ON generations (conversation_id) WHERE status = 'running'");
  await knex.raw("CREATE INDEX generations_finished ON generations (finished_at) WHERE finished_at IS NOT NULL");

  await knex.schema.createTable("generation_events", (table) => {
    table.uuid("generation_id").notNullable().references("generations.id").onDelete("CASCADE");
    table.integer("seq").notNullable();
    table.text("event").notNullable();
    table.jsonb("data").notNullable();
    table.primary(["generation_id", "seq"]);
  });

  await knex.schema.alterTable("messages", (table) => {
    table.boolean("stopped").notNullable().defaultTo(false);
  });
  await knex.schema.alterTable("conversations", (table) => {
    table.bigInteger("input_tokens_total").notNullable().defaultTo(0);
    table.bigInteger("output_tokens_total").notNullable().defaultTo(0);
  });
  await knex.raw(`
    UPDATE conversations c SET input_tokens_total = t.input, output_tokens_total = t.output
    FROM (SELECT conversation_id, coalesce(sum(input_tokens), 0) AS input, coalesce(sum(output_tokens), 0) AS output
          FROM messages WHERE role = 'assistant' GROUP BY conversation_id) t
    WHERE t.conversation_id = c.id`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable("conversations", (table) => {
    table.dropColumn("input_tokens_total");
    table.dropColumn("output_tokens_total");
  });
  await knex.schema.alterTable("messages", (table) => table.dropColumn("stopped"));
  await knex.schema.dropTable("generation_events");
  await knex.schema.dropTable("generations");
}
