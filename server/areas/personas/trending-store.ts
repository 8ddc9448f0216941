import type { Knex } from "knex";
import { byLiveCreator } from "./shown.ts";

// SQL of the trending definition (server/areas/personas/trending.ts): scores are summed from the hourly
// message rollup that a trigger on messages keeps (migration 0007) by the refresh task only; the
// sorts read the scores it stored (migration 0014), never the rollup or the messages.

/** The hour bucket (hours since the Unix epoch) an instant falls in, as the rollup stores it. */
export function hourBucket(at: Date): number {
  return Math.floor(at.getTime() / 3_600_000);
}

/** `persona_id, score`: messages per persona from the hour bucket `sinceHour` on. */
export function recentActivity(knex: Knex, sinceHour: number): Knex.QueryBuilder {
  return knex("persona_activity_hourly")
    .select("persona_id")
    .sum({ score: "messages" })
    .where("hour", ">=", sinceHour)
    .groupBy("persona_id");
}

/**
 * The trending order over `personas as p` left-joined to scores `t` (`persona_id, score`): highest
 * score, then most messages ever, then newest; `id` last so that equal keys keep one order.
 */
export const TRENDING_ORDER = "coalesce(t.score, 0) DESC, p.message_count DESC, p.created_at DESC, p.id DESC";

/** The stored scores of the last refresh, to left-join as `t` under TRENDING_ORDER. */
export const TRENDING_SCORES = "persona_trending_scores";

/**
 * Stores every persona's score from the hour bucket `sinceHour` on: new and changed scores are
 * written, personas without messages in the window lose theirs (a trigger carries the change to
 * their marketplace listings). Unchanged scores are not rewritten. Returns how many rows changed.
 */
export async function refreshTrendingScores(knex: Knex, sinceHour: number): Promise<number> {
  return knex.transaction(async (trx) => {
    const dropped = await trx("persona_trending_scores as s")
      .whereNotExists((active) => active.select(trx.raw("1")).from("persona_activity_hourly as a").whereRaw("a.persona_id = s.persona_id").where("a.hour", ">=", sinceHour))
      .delete();
    const saved = await trx.raw<{ rowCount: number }>(
      `INSERT INTO persona_trending_scores AS s (persona_id, score)
       SELECT a.persona_id, a.score FROM (?) a JOIN personas p ON p.id = a.persona_id ORDER BY a.persona_id
       ON CONFLICT (persona_id) DO UPDATE SET score = excluded.score WHERE s.score <> excluded.score`,
      [recentActivity(trx, sinceHour)],
    );
    return dropped + (saved.rowCount ?? 0);
  });
}

/** The first `size` public personas (shown beyond their owners: store.ts, byLiveCreator) in the trending order with at least `minMessages`. */
function topTrending(knex: Knex, sinceHour: number, minMessages: number, size: number): Knex.QueryBuilder {
  return byLiveCreator(knex("personas as p"))
    .join(recentActivity(knex, sinceHour).as("t"), "t.persona_id", "p.id")
    .where("p.is_public", true)
    .where("t.score", ">=", minMessages)
    .select("p.id as persona_id", "t.score as score")
    .orderByRaw(TRENDING_ORDER)
    .limit(size);
}

/**
 * Makes `persona_trending` the current top set in one statement: newcomers are trending since
 * `now`, those that stay keep their `trending_since`, those that left are removed. Readers see the
 * old set or the new one, and a persona deleted meanwhile is simply absent. Returns the set's size.
 */
export async function refreshTrendingSet(knex: Knex, sinceHour: number, minMessages: number, size: number, now: Date): Promise<number> {
  const result = await knex.raw<{ rows: unknown[] }>(
    `WITH top AS (?),
     gone AS (DELETE FROM persona_trending WHERE persona_id NOT IN (SELECT persona_id FROM top))
     INSERT INTO persona_trending (persona_id, score, trending_since, refreshed_at)
     SELECT persona_id, score, ?, ? FROM top
     ON CONFLICT (persona_id) DO UPDATE SET score = excluded.score, refreshed_at = excluded.refreshed_at
     RETURNING persona_id`,
    [topTrending(knex, sinceHour, minMessages, size), now, now],
  );
  return result.rows.length;
}

/** Drops rollup rows older than `beforeHour`: nothing reads past the trending window. */
export async function pruneActivity(knex: Knex, beforeHour: number): Promise<number> {
  return knex("persona_activity_hourly").where("hour", "<", beforeHour).delete();
}
