import type { Knex } from "knex";

/** OAuth 2.0: registered client applications and the authorization codes issued to them. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("oauth_clients", (table) => {
    table.text("id").primary();
    table.text("name").notNullable();
    table.text("secret_hash").notNullable();
    table.specificType("redirect_uris", "text[]").notNullable();
    table.timestamp("created_at", { useTz: true }).notNullable();
  });

  await knex.schema.createTable("oauth_codes", (table) => {
    table.text("code_hash").primary();
    table.text("client_id").notNullable().references("oauth_clients.id").onDelete("CASCADE");
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    table.text("redirect_uri").notNullable();
    table.specificType("scopes", "text[]").notNullable();
    table.text("code_challenge");
    // The session the exchange started: a replayed code revokes it (DECISIONS: OAuth).
    table.uuid("session_id").references("sessions.id").onDelete("SET NULL");
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.timestamp("expires_at", { useTz: true }).notNullable();
    table.timestamp("used_at", { useTz: true });
    // Set by a replay that came before the first exchange recorded its session_id.
    table.timestamp("reused_at", { useTz: true });
    table.index(["expires_at"]);
    table.index(["user_id"]);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable("oauth_codes");
  await knex.schema.dropTable("oauth_clients");
}
