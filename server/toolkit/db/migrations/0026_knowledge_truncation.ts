import type { Knex } from "knex";

/**
 * Issue 31 M8: a document over a per-document limit (chunks, or characters of extracted text) is
 * indexed in part; `truncation` says which limit cut it (null: the whole document is indexed).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable("knowledge_documents", (table) => {
    table.text("truncation");
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable("knowledge_documents", (table) => {
    table.dropColumn("truncation");
  });
}
