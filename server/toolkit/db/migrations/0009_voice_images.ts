import type { Knex } from "knex";

/**
 * Generated images: who asked (the export lists them, the purge deletes their files), the file's
 * random name in the blob store, and the persona whose automatic avatar it is, if any.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("images", (table) => {
    table.uuid("id").primary();
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    // Set for an automatic avatar; the image outlives its persona as the user's own.
    table.uuid("persona_id").references("personas.id").onDelete("SET NULL");
    table.text("file_name").notNullable().unique();
    table.text("url").notNullable();
    table.integer("width").notNullable();
    table.integer("height").notNullable();
    table.text("style").notNullable();
    table.text("aspect_ratio").notNullable();
    table.text("prompt").notNullable();
    table.text("provider").notNullable();
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.index(["user_id", "created_at"]);
  });
  await knex.raw("ALTER TABLE images ADD CONSTRAINT images_style CHECK (style IN ('avatar', 'banner', 'scene'))");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable("images");
}
