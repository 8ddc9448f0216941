import type { Knex } from "knex";

/**
 * Limits `query` (over `personas as <alias>`) to personas that may be shown beyond their owner: not
 * taken down (nor held for review), and made by a live account, neither deleted nor suspended. A
 * deleted account is disabled at once (DECISIONS: Account deletion), so everything it published
 * leaves every public place from that moment, through the 30-day grace period until the purge; a
 * suspended one's leaves until the suspension is lifted, and a taken-down persona until the
 * takedown is reverted (issue 41). The one rule of every public place; the marketplace keeps the
 * same rule in its `listed` copy (migration 0034, `marketplace_listed`).
 */
export function byLiveCreator(query: Knex.QueryBuilder, alias = "p"): Knex.QueryBuilder {
  return query.whereNull(`${alias}.taken_down_at`).whereNotExists((hidden) =>
    hidden
      .select(hidden.client.raw("1"))
      .from("users as creator")
      .whereRaw(`creator.id = ${alias}.creator_id`)
      .where((gone) => gone.whereNotNull("creator.deleted_at").orWhereNotNull("creator.suspended_at")),
  );
}
