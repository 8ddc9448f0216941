import type { Knex } from "knex";

/**
 * Issue 21: a running generation is held by a lease its process renews. A generation whose lease
 * ran out lost its process; whoever reads it next records it as failed instead of waiting forever.
 * Null for generations from before leases (they are treated as held).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable("generations", (table) => {
    table.timestamp("lease_until", { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable("generations", (table) => {
    table.dropColumn("lease_until");
  });
}
