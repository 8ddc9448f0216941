import type { Knex } from "knex";
import { firstFreeHandle, handleFromName } from "../../handles.ts";

/**
 * Issue 35, items 2 and 6: a persona has a readable handle, unique among its owner's personas, that
 * OpenAI-compatible clients can send as `model` and show in model pickers; and model settings: its
 * sampling defaults and which parameters clients may set. Existing personas get handles made from
 * their names, oldest first, so the first of two namesakes keeps the plain handle.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable("personas", (table) => {
    table.text("handle");
    table.jsonb("model_settings").notNullable().defaultTo("{}");
  });
  const rows: { id: string; creator_id: string; name: string }[] = await knex("personas").orderBy([{ column: "created_at" }, { column: "id" }]).select("id", "creator_id", "name");
  const taken = new Map<string, Set<string>>();
  for (const row of rows) {
    const own = taken.get(row.creator_id) ?? new Set<string>();
    taken.set(row.creator_id, own);
    const handle = firstFreeHandle(handleFromName(row.name), own);
    own.add(handle);
    await knex("personas").where({ id: row.id }).update({ handle });
  }
  await knex.schema.alterTable("personas", (table) => {
    table.text("handle").notNullable().alter();
    table.unique(["creator_id", "handle"], { indexName: "personas_creator_handle_unique" });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable("personas", (table) => {
    table.dropUnique(["creator_id", "handle"], "personas_creator_handle_unique");
    table.dropColumn("handle");
    table.dropColumn("model_settings");
  });
}
