import type { Knex } from "knex";

/**
 * Models (issue 40; docs/design/models.md):
 * - `provider_connections`: a user's own OpenAI-compatible providers (bring your own key), the key
 *   sealed with the secrets key; at most one default per user;
 * - a persona may name one of its owner's connections (gone with it: SET NULL);
 * - instruction versions and A/B variants carry generation settings of their own (`{}`: none);
 * - every stored reply records the registry model that answered (`model_id`), the one that failed
 *   before it when a fallback answered (`fallback_from`), whether it ran on the user's own key, and
 *   its cost in nano-USD (docs/adr/0365). The new columns are nullable or have a constant default:
 *   adding them rewrites no table.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("provider_connections", (table) => {
    table.uuid("id").primary();
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    table.text("name").notNullable();
    table.text("base_url").notNullable();
    // `v1.` + AES-256-GCM under a key derived from SECRETS_KEY for this purpose; null: no key.
    table.text("api_key_encrypted");
    table.text("key_hint");
    table.text("model");
    table.integer("context_window");
    table.boolean("is_default").notNullable().defaultTo(false);
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.timestamp("updated_at", { useTz: true }).notNullable();
  });
  await knex.raw("CREATE INDEX provider_connections_user ON provider_connections (user_id, created_at DESC)");
  await knex.raw("CREATE UNIQUE INDEX provider_connections_one_default ON provider_connections (user_id) WHERE is_default");

  await knex.schema.alterTable("personas", (table) => {
    table.uuid("provider_connection_id").references("provider_connections.id").onDelete("SET NULL");
  });
  await knex.raw("CREATE INDEX personas_provider_connection ON personas (provider_connection_id) WHERE provider_connection_id IS NOT NULL");

  await knex.schema.alterTable("instruction_versions", (table) => {
    table.jsonb("model_settings").notNullable().defaultTo("{}");
  });
  await knex.schema.alterTable("persona_variants", (table) => {
    table.jsonb("model_settings").notNullable().defaultTo("{}");
  });

  await knex.schema.alterTable("messages", (table) => {
    table.text("model_id");
    table.text("fallback_from");
    table.boolean("own_key").notNullable().defaultTo(false);
    table.bigInteger("cost_nanos");
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable("messages", (table) => {
    table.dropColumn("cost_nanos");
    table.dropColumn("own_key");
    table.dropColumn("fallback_from");
    table.dropColumn("model_id");
  });
  await knex.schema.alterTable("persona_variants", (table) => table.dropColumn("model_settings"));
  await knex.schema.alterTable("instruction_versions", (table) => table.dropColumn("model_settings"));
  await knex.schema.alterTable("personas", (table) => table.dropColumn("provider_connection_id"));
  await knex.schema.dropTable("provider_connections");
}
