import type { Knex } from "knex";

/** Cross-cutting tables: pgvector, request idempotency, shared rate-limit counters. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw("CREATE EXTENSION IF NOT EXISTS vector");

  await knex.schema.createTable("idempotency_keys", (table) => {
    // Who sent it (user, key or client fingerprint) and the key they chose: a key is private to its sender.
    table.text("scope").notNullable();
    table.text("key").notNullable();
    table.text("operation_id").notNullable();
    table.text("request_hash").notNullable();
    table.text("state").notNullable(); // in_progress | done
    table.integer("status");
    table.jsonb("response_body");
    table.jsonb("response_headers");
    table.timestamp("created_at", { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.primary(["scope", "key"]);
    table.index(["created_at"]);
  });

  // The table rate-limiter-flexible's Postgres store expects (it is created here, not by the library).
  await knex.schema.createTable("rate_limits", (table) => {
    table.string("key", 255).primary();
    table.integer("points").notNullable().defaultTo(0);
    table.bigInteger("expire");
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable("rate_limits");
  await knex.schema.dropTable("idempotency_keys");
}
