import { v7 as uuidv7 } from "uuid";
import type { Services } from "../../toolkit/services.ts";
import { usdOf } from "../../toolkit/models/index.ts";
import { dailyMessages, ratingsMean, replyCostNanos, senderFigures } from "./store.ts";

/*
 * Analytics of a persona over the last 7, 30 or 90 UTC days, today included, read from the daily
 * rollups of messages and senders (migration 0014): at most 90 rows each. Retention
 * (docs/adr/0175-studio-analytics-read-daily-rollups-exact-from-the-stored.md): of the users who
 * sent a message in the first half of the period (the oldest floor(days / 2) days), the fraction
 * who sent one again in the second half; null when nobody was active in the first half.
 */

const DAY_MS = 86_400_000;
export const PERIOD_DAYS = { "7d": 7, "30d": 30, "90d": 90 } as const;
export type Period = keyof typeof PERIOD_DAYS;

export async function analytics(services: Services, personaId: string, period: Period) {
  const now = services.now();
  const days = PERIOD_DAYS[period];
  const today = Math.floor(now.getTime() / DAY_MS);
  const fromDay = today - days + 1;
  const splitDay = fromDay + Math.floor(days / 2);
  const { knex } = services.db;
  const [messages, users, mean, cost] = await Promise.all([
    dailyMessages(knex, personaId, fromDay, today),
    senderFigures(knex, personaId, fromDay, splitDay, today),
    ratingsMean(knex, personaId, new Date(fromDay * DAY_MS), now),
    replyCostNanos(knex, personaId, new Date(fromDay * DAY_MS), now),
  ]);
  const daily_breakdown = Array.from({ length: days }, (_, i) => {
    const day = fromDay + i;
    return { date: new Date(day * DAY_MS).toISOString().slice(0, 10), messages: messages.get(day) ?? 0, users: users.byDay.get(day) ?? 0 };
  });
  return {
    id: uuidv7(),
    persona_id: personaId,
    period,
    message_count: daily_breakdown.reduce((sum, day) => sum + day.messages, 0),
    unique_users: users.users,
    avg_rating: mean === null ? null : Math.round(mean * 100) / 100,
    retention_rate: users.firstHalf === 0 ? null : users.retained / users.firstHalf,
    daily_breakdown,
    // What the period's replies cost at the registry's prices (issue 40).
    cost_usd: usdOf(cost),
    generated_at: now.toISOString(),
  };
}
