import type { Task } from "graphile-worker";
import type { Services } from "../../toolkit/services.ts";
import { hourBucket, pruneActivity, refreshTrendingScores, refreshTrendingSet } from "./trending-store.ts";

/*
 * "Trending", defined once for explore, the social feed and the marketplace
 * (docs/adr/0103-trending-defined-once.md):
 * - a persona's trending score is the number of messages stored with it in the last 7 days,
 *   counted from an hourly rollup (so the window starts at the top of the hour 7 days ago);
 * - scores are computed by the refresh every TRENDING_REFRESH_MINUTES and stored; the trending
 *   sorts read the stored scores, so a request never sums the rollup (issue 14, benchmark);
 * - the trending order of explore is score, then messages of all time, then newest, then id; the
 *   marketplace's is score, then newest listing, then listing id (server/areas/marketplace/store.ts);
 * - the trending set is the first TRENDING_SET_SIZE public personas of that order with at least
 *   TRENDING_MIN_MESSAGES messages in the window, recomputed every TRENDING_REFRESH_MINUTES; a
 *   persona is trending since the refresh that first put it in the set, and stops when it leaves it.
 */

const HOUR_MS = 3_600_000;

/** The window the trending score counts messages over. */
export const TRENDING_WINDOW_MS = 7 * 24 * HOUR_MS;
/** How many personas the trending set holds at most. */
export const TRENDING_SET_SIZE = 100;
/** Messages in the window a persona needs to be in the trending set at all. */
export const TRENDING_MIN_MESSAGES = 10;
export const TRENDING_REFRESH_MINUTES = 10;

export const TRENDING_REFRESH_TASK = "persona_trending_refresh";
export const trendingCrontab = [`*/${TRENDING_REFRESH_MINUTES} * * * * ${TRENDING_REFRESH_TASK}`];

/** The first hour bucket the trending score counts at `now`. */
export function trendingSinceHour(now: Date): number {
  return hourBucket(new Date(now.getTime() - TRENDING_WINDOW_MS));
}

/** Recomputes every score and the trending set, and drops rollup rows the window no longer reads. Returns the set's size. */
export async function refreshTrending(services: Services): Promise<number> {
  const now = services.now();
  const since = trendingSinceHour(now);
  await refreshTrendingScores(services.db.knex, since);
  const size = await refreshTrendingSet(services.db.knex, since, TRENDING_MIN_MESSAGES, TRENDING_SET_SIZE, now);
  // A day of slack: a clock set back a little must not find its window already pruned.
  await pruneActivity(services.db.knex, since - 24);
  return size;
}

export function trendingTasks(services: Services): Record<string, Task> {
  return {
    [TRENDING_REFRESH_TASK]: async () => {
      const size = await refreshTrending(services);
      services.log.debug({ size }, "trending set refreshed");
    },
  };
}
