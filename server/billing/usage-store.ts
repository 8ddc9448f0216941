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
  lease: QuotaLease,
): Promise<{ count: number | undefined; period: string | undefined }> {
  const entries = Object.entries(limits);
  const limitOf = `CASE u.plan ${entries.map(() => "WHEN ? THEN ?::int").join(" ")} ELSE ?::int END`;
  const result = await knex.raw<{ rows: { messages_sent: number; period_start: string }[] }>(
    `WITH quota AS (SELECT ${limitOf} AS messages_limit FROM users u WHERE u.id = ?),
     period AS (
       SELECT COALESCE(
         (SELECT ((CASE WHEN s.current_period_end > ?::timestamptz THEN s.current_period_start ELSE s.current_period_end END) AT TIME ZONE 'UTC')::date
            FROM billing_subscriptions s WHERE s.user_id = ? AND s.plan <> 'free'),
         ?::date) AS start),
     reserved AS (
       INSERT INTO usage_counters (user_id, period_start, messages_sent)
         SELECT ?, period.start, 1 FROM quota, period WHERE quota.messages_limit > 0
       ON CONFLICT (user_id, period_start) DO UPDATE SET messages_sent = usage_counters.messages_sent + 1
         WHERE usage_counters.messages_sent < (SELECT messages_limit FROM quota)
       RETURNING user_id, messages_sent, period_start),
     ${LEASE_CTE}
     SELECT messages_sent, to_char(period_start, 'YYYY-MM-DD') AS period_start, (SELECT count(*) FROM lease) AS leased FROM reserved`,
    [...entries.flat(), fallback, userId, now, userId, calendarStart, userId, ...leaseBindings(lease)],
  );
  const row = result.rows[0];
  return { count: row?.messages_sent, period: row?.period_start };
}

/** The durable side of a reservation: the reply it is for, and when to check that reply was stored. */
export interface QuotaLease {
  replyId: string;
  seconds: number;
}

export const QUOTA_RELEASE_TASK = "quota_release";
const leaseKey = (replyId: string) => `${QUOTA_RELEASE_TASK}:${replyId}`;

/**
 * A CTE `lease` queueing the reservation's release job, for a statement whose CTE `reserved`
 * returns `user_id` and `period_start` of a counted message (none when it was refused). Its
 * bindings are `leaseBindings`. The statement must read `lease` (a CTE that is not read is not run).
 */
export const LEASE_CTE = `lease AS (
       SELECT graphile_worker.add_job(?, json_build_object('user_id', r.user_id, 'period_start', to_char(r.period_start, 'YYYY-MM-DD'), 'reply_id', ?::text),
         run_at => now() + make_interval(secs => ?::int), max_attempts => 25, job_key => ?) FROM reserved r)`;

export function leaseBindings(lease: QuotaLease): (string | number)[] {
  return [QUOTA_RELEASE_TASK, lease.replyId, lease.seconds, leaseKey(lease.replyId)];
}

/**
 * The process that reserved gives the message back (the send failed), unless the release job has
 * already started doing it: the job is removed and the counter lowered in one statement, only if
 * the job was still waiting. So a message is given back once, by whichever of the two comes first.
 */
export async function giveBackLeased(knex: Knex, userId: string, periodStart: string, replyId: string): Promise<void> {
  await knex.raw(
    `WITH removed AS (SELECT j.id, j.locked_at FROM graphile_worker.remove_job(?) j),
     given AS (
       UPDATE usage_counters SET messages_sent = messages_sent - 1
        WHERE user_id = ? AND period_start = ?::date AND messages_sent > 0
          AND EXISTS (SELECT 1 FROM removed WHERE id IS NOT NULL AND locked_at IS NULL)
       RETURNING 1)
     SELECT (SELECT count(*) FROM removed) AS removed, (SELECT count(*) FROM given) AS given`,
    [leaseKey(replyId), userId, periodStart],
  );
}

/** The reply was stored: its lease has nothing left to check. */
export async function settleLease(knex: Knex, replyId: string): Promise<void> {
  await knex.raw("SELECT graphile_worker.remove_job(?)", [leaseKey(replyId)]);
}

/**
 * The release job: gives the message back unless its reply was stored. One-to-one and room
 * replies are looked up by id (stored in the same transaction as the reply, so a crash right after
 * storing is seen); replies kept nowhere else (studio test chat, the OpenAI prefix) were settled
 * by removing this job when they ended. Read here rather than through those areas: it is the one
 * read, by primary key, and billing must not depend on the conversation and room services.
 */
export async function releaseUnlessStored(knex: Knex, userId: string, periodStart: string, replyId: string): Promise<boolean> {
  // remove_job on the running job clears its key and spends its attempts in the same transaction
  // as the give-back: once committed, neither a repeated run nor the reserving process (whose own
  // give-back needs the waiting job) can give the message back again.
  const result = await knex.raw<{ rows: { given: string | number }[] }>(
    `WITH spent AS (SELECT j.id FROM graphile_worker.remove_job(?) j),
     given AS (
       UPDATE usage_counters SET messages_sent = messages_sent - 1
        WHERE user_id = ? AND period_start = ?::date AND messages_sent > 0
          AND EXISTS (SELECT 1 FROM spent WHERE id IS NOT NULL)
          AND NOT EXISTS (SELECT 1 FROM messages WHERE id = ?::uuid)
          AND NOT EXISTS (SELECT 1 FROM room_messages WHERE id = ?::uuid)
        RETURNING 1)
     SELECT (SELECT count(*) FROM spent) AS spent, (SELECT count(*) FROM given) AS given`,
    [leaseKey(replyId), userId, periodStart, replyId, replyId],
  );
  return Number(result.rows[0]?.given ?? 0) > 0;
}
