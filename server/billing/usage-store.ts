import type { Knex } from "knex";

/** The user's plan name, locking the user row so that concurrent limit checks queue up behind it. */
export async function lockUserPlan(trx: Knex.Transaction, userId: string): Promise<string> {
  const row = await trx("users").select("plan").where({ id: userId }).forUpdate().first();
  return (row?.plan as string | undefined) ?? "free";
}

export async function userPlan(knex: Knex, userId: string): Promise<string> {
  const row = await knex("users").select("plan").where({ id: userId }).first();
  return (row?.plan as string | undefined) ?? "free";
}

/**
 * Counts one message against the month's quota in a single statement, only while under the limit
 * of the user's plan (`limits` by plan name, `fallback` for any other); answers the new count, or
 * undefined when the quota is used up. Concurrent sends cannot overshoot, and the plan lookup costs
 * no extra round trip.
 */
export async function incrementMessagesUnderPlan(
  knex: Knex,
  userId: string,
  periodStart: string,
  limits: Record<string, number>,
  fallback: number,
): Promise<number | undefined> {
  const entries = Object.entries(limits);
  const limitOf = `CASE u.plan ${entries.map(() => "WHEN ? THEN ?::int").join(" ")} ELSE ?::int END`;
  const result = await knex.raw<{ rows: { messages_sent: number }[] }>(
    `WITH quota AS (SELECT ${limitOf} AS messages_limit FROM users u WHERE u.id = ?)
     INSERT INTO usage_counters (user_id, period_start, messages_sent)
       SELECT ?, ?, 1 FROM quota WHERE quota.messages_limit > 0
     ON CONFLICT (user_id, period_start) DO UPDATE SET messages_sent = usage_counters.messages_sent + 1
       WHERE usage_counters.messages_sent < (SELECT messages_limit FROM quota)
     RETURNING messages_sent`,
    [...entries.flat(), fallback, userId, userId, periodStart],
  );
  return result.rows[0]?.messages_sent;
}

export async function decrementMessages(knex: Knex, userId: string, periodStart: string): Promise<void> {
  await knex("usage_counters")
    .where({ user_id: userId, period_start: periodStart })
    .where("messages_sent", ">", 0)
    .decrement("messages_sent", 1);
}

export async function messagesSent(knex: Knex, userId: string, periodStart: string): Promise<number> {
  const row = await knex("usage_counters").select("messages_sent").where({ user_id: userId, period_start: periodStart }).first();
  return (row?.messages_sent as number | undefined) ?? 0;
}

/** The period of the user's paid subscription as last recorded; undefined on the free plan. */
export async function paidPeriodOf(knex: Knex, userId: string): Promise<{ start: Date; end: Date; interval: "month" | "year" } | undefined> {
  const row = await knex("billing_subscriptions")
    .where({ user_id: userId })
    .whereNot({ plan: "free" })
    .first("current_period_start", "current_period_end", "interval");
  return row && { start: new Date(row.current_period_start), end: new Date(row.current_period_end), interval: row.interval };
}

/**
 * `incrementMessagesUnderPlan` in the usage period, found in the same statement (a message send
 * pays no extra round trip): the paid subscription's period as `usagePeriod` defines it (its
 * current one, or the next once it has ended and the renewal is not recorded yet), else the
 * calendar month starting `calendarStart`. Answers the new count (undefined when the quota is used
 * up) and the period's key.
 */
export async function incrementMessagesInPeriod(
  knex: Knex,
  userId: string,
  now: Date,
  calendarStart: string,
  limits: Record<string, number>,
  fallback: number,
): Promise<{ count: number | undefined; period: string | undefined }> {
  const entries = Object.entries(limits);
  const limitOf = `CASE u.plan ${entries.map(() => "WHEN ? THEN ?::int").join(" ")} ELSE ?::int END`;
  const result = await knex.raw<{ rows: { messages_sent: number; period_start: string }[] }>(
    `WITH quota AS (SELECT ${limitOf} AS messages_limit FROM users u WHERE u.id = ?),
     period AS (
       SELECT COALESCE(
         (SELECT ((CASE WHEN s.current_period_end > ?::timestamptz THEN s.current_period_start ELSE s.current_period_end END) AT TIME ZONE 'UTC')::date
            FROM billing_subscriptions s WHERE s.user_id = ? AND s.plan <> 'free'),
         ?::date) AS start)
     INSERT INTO usage_counters (user_id, period_start, messages_sent)
       SELECT ?, period.start, 1 FROM quota, period WHERE quota.messages_limit > 0
     ON CONFLICT (user_id, period_start) DO UPDATE SET messages_sent = usage_counters.messages_sent + 1
       WHERE usage_counters.messages_sent < (SELECT messages_limit FROM quota)
     RETURNING messages_sent, to_char(period_start, 'YYYY-MM-DD') AS period_start`,
    [...entries.flat(), fallback, userId, now, userId, calendarStart, userId],
  );
  const row = result.rows[0];
  return { count: row?.messages_sent, period: row?.period_start };
}
