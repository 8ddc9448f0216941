import type { Knex } from "knex";

/**
 * Integrations (issue 19): a persona's bot on a chat platform, with its token encrypted at rest; the
 * conversation each platform channel maps to; the platform event ids already taken (retries of a
 * callback are acknowledged and dropped); and the leases that keep exactly one live gateway
 * connection per integration across worker processes.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("integrations", (table) => {
    table.uuid("id").primary();
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    table.uuid("persona_id").notNullable().references("personas.id").onDelete("CASCADE");
    table.text("platform").notNullable();
    table.text("status").notNullable();
    table.text("guild_id");
    table.text("workspace_id");
    table.specificType("channel_ids", "text[]");
    table.boolean("auto_respond").notNullable().defaultTo(false);
    table.text("token_encrypted").notNullable();
    // Messenger: the secret token its webhook carries; workspace: the app's signing secret (when given).
    table.text("secret_encrypted");
    // The bot's own account on the platform, from the token check: never answer it, know mentions of it.
    table.text("bot_user_id").notNullable();
    table.text("bot_username");
    table.integer("message_count").notNullable().defaultTo(0);
    table.timestamp("last_message_at", { useTz: true });
    table.jsonb("last_error");
    table.timestamp("connected_at", { useTz: true }).notNullable();
    table.timestamp("updated_at", { useTz: true }).notNullable();
  });
  await knex.raw("ALTER TABLE integrations ADD CONSTRAINT integrations_platform CHECK (platform IN ('forum', 'messenger', 'workspace'))");
  await knex.raw("ALTER TABLE integrations ADD CONSTRAINT integrations_status CHECK (status IN ('active', 'inactive'))");
  await knex.raw("CREATE UNIQUE INDEX integrations_persona_platform ON integrations (persona_id, platform)");
  // One bot account, one integration: two would both answer (or fight over one webhook).
  await knex.raw("CREATE UNIQUE INDEX integrations_bot ON integrations (platform, bot_user_id)");
  await knex.raw("CREATE INDEX integrations_user ON integrations (user_id, connected_at DESC, id DESC)");

  await knex.schema.createTable("integration_channels", (table) => {
    table.uuid("integration_id").notNullable().references("integrations.id").onDelete("CASCADE");
    // The platform's channel or chat id (workspace: team-qualified), one conversation each.
    table.text("channel_key").notNullable();
    table.uuid("conversation_id").notNullable().references("conversations.id").onDelete("CASCADE");
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.primary(["integration_id", "channel_key"]);
  });
  await knex.raw("CREATE INDEX integration_channels_conversation ON integration_channels (conversation_id)");

  await knex.schema.createTable("integration_events", (table) => {
    table.uuid("integration_id").notNullable().references("integrations.id").onDelete("CASCADE");
    table.text("event_id").notNullable();
    table.timestamp("received_at", { useTz: true }).notNullable();
    table.primary(["integration_id", "event_id"]);
  });
  await knex.raw("CREATE INDEX integration_events_age ON integration_events (received_at)");

  await knex.schema.createTable("integration_leases", (table) => {
    table.uuid("integration_id").primary().references("integrations.id").onDelete("CASCADE");
    table.text("holder").notNullable();
    table.timestamp("expires_at", { useTz: true }).notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable("integration_leases");
  await knex.schema.dropTable("integration_events");
  await knex.schema.dropTable("integration_channels");
  await knex.schema.dropTable("integrations");
}
