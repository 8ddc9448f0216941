import type { Knex } from "knex";

/** Data exports: one row per requested archive; the archive itself is kept here until purged. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("data_exports", (table) => {
    table.uuid("id").primary();
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    table.text("status").notNullable(); // processing | ready | failed
    table.timestamp("requested_at", { useTz: true }).notNullable();
    table.timestamp("completed_at", { useTz: true });
    table.jsonb("archive");
    table.text("error");
    table.index(["user_id"]);
  });
  await knex.raw("ALTER TABLE data_exports ADD CONSTRAINT data_exports_status CHECK (status IN ('processing', 'ready', 'failed'))");
  // At most one export in progress per user, so two concurrent requests answer the same one.
  await knex.raw("CREATE UNIQUE INDEX data_exports_one_processing ON data_exports (user_id) WHERE status = 'processing'");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable("data_exports");
}
