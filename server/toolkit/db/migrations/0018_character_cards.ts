import type { Knex } from "knex";

/**
 * What a character card carries beyond a persona's own columns (docs/design/cards.md): kept with the persona it was imported into, for its replies (lorebook, sample messages)
 * and for export. `card_avatars` records the PNGs stored as avatars, so that the purge deletes
 * their files; a file outlives its persona as the user's own, as generated images do.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("persona_cards", (table) => {
    table.uuid("persona_id").primary().references("personas.id").onDelete("CASCADE");
    // The card's own texts the instructions were built from; export gives them back while the
    // instructions are still the ones they built.
    table.jsonb("source").notNullable();
    table.jsonb("alternate_greetings").notNullable();
    table.text("mes_example").notNullable();
    table.jsonb("tags").notNullable();
    table.text("creator").notNullable();
    table.text("character_version").notNullable();
    table.text("creator_notes").notNullable();
    table.jsonb("lorebook");
    table.jsonb("extensions").notNullable();
    // V3 fields kept only for export (nickname, source, assets, group greetings, dates, notes by language).
    table.jsonb("extra").notNullable();
    table.timestamp("created_at", { useTz: true }).notNullable();
  });
  await knex.schema.createTable("card_avatars", (table) => {
    table.text("file_name").primary();
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    table.uuid("persona_id").references("personas.id").onDelete("SET NULL");
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.index(["user_id"]);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable("card_avatars");
  await knex.schema.dropTable("persona_cards");
}
