import type { Knex } from "knex";

/** Accounts and credentials: users, login sessions, refresh tokens, API keys, e-mail tokens, OAuth. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("instance_secrets", (table) => {
    table.text("name").primary();
    table.text("value").notNullable();
    table.timestamp("created_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable("users", (table) => {
    table.uuid("id").primary();
    table.text("email").notNullable();
    table.text("username").notNullable();
    table.text("password_hash").notNullable();
    table.text("display_name");
    table.text("avatar_url");
    table.text("bio");
    table.boolean("email_verified").notNullable().defaultTo(false);
    table.text("plan").notNullable().defaultTo("free");
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.timestamp("updated_at", { useTz: true }).notNullable();
    table.timestamp("deleted_at", { useTz: true });
  });
  // Unique case-insensitively (409 on a clash); a deleted account keeps its names until purged.
  await knex.raw("CREATE UNIQUE INDEX users_email_lower ON users (lower(email))");
  await knex.raw("CREATE UNIQUE INDEX users_username_lower ON users (lower(username))");

  // A login (or an OAuth grant) is a session: its refresh tokens form one family, revoked together.
  await knex.schema.createTable("sessions", (table) => {
    table.uuid("id").primary();
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    table.text("client_id");
    table.specificType("scopes", "text[]");
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.timestamp("revoked_at", { useTz: true });
    table.index(["user_id"]);
  });

  await knex.schema.createTable("refresh_tokens", (table) => {
    table.text("token_hash").primary();
    table.uuid("session_id").notNullable().references("sessions.id").onDelete("CASCADE");
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.timestamp("expires_at", { useTz: true }).notNullable();
    table.timestamp("used_at", { useTz: true });
  });

  await knex.schema.createTable("api_keys", (table) => {
    table.uuid("id").primary();
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    table.text("name").notNullable();
    table.text("key_hash").notNullable().unique();
    table.text("key_hint").notNullable();
    table.specificType("scopes", "text[]").notNullable();
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.timestamp("last_used_at", { useTz: true });
    table.timestamp("expires_at", { useTz: true });
    table.timestamp("revoked_at", { useTz: true });
    table.index(["user_id"]);
  });

  await knex.schema.createTable("email_tokens", (table) => {
    table.text("token_hash").primary();
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    table.text("purpose").notNullable(); // verify_email | reset_password
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.timestamp("expires_at", { useTz: true }).notNullable();
    table.timestamp("used_at", { useTz: true });
  });

  await knex.schema.createTable("email_outbox", (table) => {
    table.uuid("id").primary();
    table.text("to").notNullable();
    table.text("subject").notNullable();
    table.text("text").notNullable();
    table.text("kind").notNullable();
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.timestamp("sent_at", { useTz: true });
    table.index(["created_at"]);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const name of ["email_outbox", "email_tokens", "api_keys", "refresh_tokens", "sessions", "users", "instance_secrets"]) {
    await knex.schema.dropTable(name);
  }
}
