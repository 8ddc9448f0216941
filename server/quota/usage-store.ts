import type { Knex } from "knex";
import type { StatementPart } from "../toolkit/db/statement-parts.ts";

/** The tables quota owns: usage counters per period, and the leases of messages being replied to. */
export const quotaTables = ["usage_counters", "quota_leases"] as const;

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

/** What a statement needs to reserve one message of a user's monthly quota in its own round trip. */
export interface ReservationQuery {
  userId: string;
  /** The clock, to tell a subscription's current period from one that has ended. */
  now: Date;
  /** The calendar month's first day (YYYY-MM-DD): the period of a user without a paid subscription. */
  calendarStart: string;
  /** The message limit of each plan, and the limit of a plan none of them names. */
  limits: Record<string, number>;
  fallback: number;
  lease: QuotaLease;
}

/** What a statement with `reservationCtes` reads of it (its `outcome` select list, which reads `lease` so that it runs). */
export interface ReservationOutcome {
  /** The period's message count after this reservation; null when none was made (quota used up, or `onlyIf` false). */
  reserved: number | null;
  leased: number;
  plan: string;
  messages_limit: number;
  /** Messages counted in the period before this statement. */
  used: number;
  /** The usage period the message was counted in (YYYY-MM-DD): a paid subscription's, else the month's. */
  period_start: string;
}

const RESERVATION_OUTCOME = `(SELECT messages_sent FROM reserved) AS reserved,
       (SELECT count(*) FROM lease) AS leased,
       coalesce((SELECT plan FROM quota), 'free') AS plan,
       (SELECT messages_limit FROM quota) AS messages_limit,
       (SELECT messages_sent FROM counted) AS used,
       (SELECT to_char(start, 'YYYY-MM-DD') FROM period) AS period_start`;

/**
 * The CTEs that reserve one message in the usage period, for a statement of its own (the chat
 * turn reads everything else it needs in the same round trip): `quota` (the user's plan and
 * message limit), `period` (the paid subscription's period as `usagePeriod` defines it: its
 * current one, or the next once it has ended and the renewal is not recorded yet; else the
 * calendar month), `counted` (messages sent in the period before this one), `reserved` (the
 * conditional upsert: a row only when the message fits) and `lease`. `onlyIf` is an SQL condition
 * over the statement's earlier CTEs (the turn reserves nothing for a conversation that is not
 * there). The statement must read `lease`: a CTE nobody reads does not run; `outcome` is the
 * select list that reads it and what a caller needs of the reservation (`ReservationOutcome`).
 */
export function reservationCtes(q: ReservationQuery, onlyIf = "true"): { sql: string; bindings: (string | number | Date)[]; outcome: string } {
  const entries = Object.entries(q.limits);
  const limitOf = `CASE u.plan ${entries.map(() => "WHEN ? THEN ?::int").join(" ")} ELSE ?::int END`;
  return {
    outcome: RESERVATION_OUTCOME,
    sql: `quota AS (SELECT ${limitOf} AS messages_limit, u.plan FROM users u WHERE u.id = ?),
     period AS (
       SELECT COALESCE(
         (SELECT ((CASE WHEN s.current_period_end > ?::timestamptz THEN s.current_period_start ELSE s.current_period_end END) AT TIME ZONE 'UTC')::date
            FROM billing_subscriptions s WHERE s.user_id = ? AND s.plan <> 'free'),
         ?::date) AS start),
     counted AS (SELECT coalesce((SELECT messages_sent FROM usage_counters WHERE user_id = ? AND period_start = (SELECT start FROM period)), 0) AS messages_sent),
     reserved AS (
       INSERT INTO usage_counters (user_id, period_start, messages_sent)
         SELECT ?, period.start, 1 FROM quota, period WHERE quota.messages_limit > 0 AND (${onlyIf})
       ON CONFLICT (user_id, period_start) DO UPDATE SET messages_sent = usage_counters.messages_sent + 1
         WHERE usage_counters.messages_sent < (SELECT messages_limit FROM quota)
       RETURNING user_id, messages_sent, period_start),
     ${LEASE_CTE}`,
    bindings: [...entries.flat(), q.fallback, q.userId, q.now, q.userId, q.calendarStart, q.userId, q.userId, ...leaseBindings(q.lease)],
  };
}

/**
 * `incrementMessagesUnderPlan` in the usage period, found in the same statement (a message send
 * pays no extra round trip). Answers the new count (undefined when the quota is used up) and the
 * period's key.
 */
export async function incrementMessagesInPeriod(knex: Knex, q: ReservationQuery): Promise<{ count: number | undefined; period: string | undefined }> {
  const reservation = reservationCtes(q);
  const result = await knex.raw<{ rows: { messages_sent: number; period_start: string }[] }>(
    `WITH ${reservation.sql}
     SELECT messages_sent, to_char(period_start, 'YYYY-MM-DD') AS period_start, (SELECT count(*) FROM lease) AS leased FROM reserved`,
    reservation.bindings,
  );
  const row = result.rows[0];
  return { count: row?.messages_sent, period: row?.period_start };
}

export interface QuotaLease {
  replyId: string;
  seconds: number;
}

/** The task name of the release jobs that queued a lease until migration 0023 (see `recordExpiredLease`). */
export const QUOTA_RELEASE_TASK = "quota_release";

/**
 * A CTE `lease` recording the reservation's lease, for a statement whose CTE `reserved` returns
 * `user_id` and `period_start` of a counted message (none when it was refused). Its bindings are
 * `leaseBindings`. The statement must read `lease` (a CTE that is not read is not run).
 */
export const LEASE_CTE = `lease AS (
       INSERT INTO quota_leases (reply_id, user_id, period_start, expires_at)
         SELECT ?::uuid, r.user_id, r.period_start, now() + make_interval(secs => ?::int) FROM reserved r
       RETURNING reply_id)`;

export function leaseBindings(lease: QuotaLease): (string | number)[] {
  return [lease.replyId, lease.seconds];
}

/**
 * The process that reserved gives the message back (the send failed). Removing the lease is the
 * claim: the message is given back once, by whichever of this and the sweep removes it first.
 */
export async function giveBackLeased(knex: Knex, userId: string, periodStart: string, replyId: string): Promise<void> {
  await knex.raw(
    `WITH removed AS (DELETE FROM quota_leases WHERE reply_id = ? RETURNING 1)
     UPDATE usage_counters SET messages_sent = messages_sent - 1
      WHERE user_id = ? AND period_start = ?::date AND messages_sent > 0 AND EXISTS (SELECT 1 FROM removed)`,
    [replyId, userId, periodStart],
  );
}

/**
 * The end of these replies' leases as part of the statement that stores the replies
 * (statement-parts.ts): a reply and the end of its lease commit together or not at all.
 */
export function settledLeasesPart(replyIds: readonly string[]): StatementPart {
  return { ctes: [{ sql: "settled_leases AS (DELETE FROM quota_leases WHERE reply_id = ANY(?::uuid[]))", bindings: [replyIds as string[]] }] };
}

/** The reply was stored: its lease has nothing left to check. */
export async function settleLease(knex: Knex, replyId: string): Promise<void> {
  await knex("quota_leases").where({ reply_id: replyId }).delete();
}

/**
 * The sweep: ends up to `limit` leases that expired by `now` and, in the same statement, gives back
 * the messages of those whose reply was never stored (the process that reserved died mid-reply).
 * A reply is looked up by id in `replyTables`, the tables the areas store replies in
 * (AreaModule.repliesStoredIn: messages, room_messages): a reply is stored in the same transaction
 * as its lease is settled, so a crash right after storing is seen; replies kept nowhere else
 * (studio test chat, the OpenAI prefix) settled their lease when they ended. The areas name their
 * tables rather than quota reading them unasked: quota sits below the areas and knows none.
 * Sweeps running at once skip each other's rows, so each lease ends once.
 */
export async function releaseExpiredLeases(knex: Knex, now: Date, limit: number, replyTables: readonly string[]): Promise<{ ended: number; given: number }> {
  // Table names come from the areas' code, never from a request; checked all the same, since they are spliced in.
  const stored = replyTables.map((table) => {
    if (!/^[a-z_]+$/.test(table)) throw new Error(`not a table name: ${table}`);
    return `AND NOT EXISTS (SELECT 1 FROM ${table} WHERE id = e.reply_id)`;
  });
  const result = await knex.raw<{ rows: { ended: number; given: number }[] }>(
    `WITH expired AS (
       DELETE FROM quota_leases WHERE reply_id IN (
         SELECT reply_id FROM quota_leases WHERE expires_at <= ? ORDER BY expires_at LIMIT ? FOR UPDATE SKIP LOCKED)
       RETURNING reply_id, user_id, period_start),
     lost AS (
       SELECT e.user_id, e.period_start, count(*)::int AS n FROM expired e
        WHERE true ${stored.join(" ")}
        GROUP BY e.user_id, e.period_start),
     given AS (
       UPDATE usage_counters u SET messages_sent = greatest(u.messages_sent - lost.n, 0)
         FROM lost WHERE u.user_id = lost.user_id AND u.period_start = lost.period_start
       RETURNING lost.n)
     SELECT (SELECT count(*) FROM expired)::int AS ended, coalesce((SELECT sum(n) FROM given), 0)::int AS given`,
    [now, limit],
  );
  return result.rows[0] ?? { ended: 0, given: 0 };
}

/**
 * A release job queued before migration 0023 (by a process of the previous version, during an
 * upgrade) hands its reservation to the sweep: a lease that has already expired.
 */
export async function recordExpiredLease(knex: Knex, lease: { userId: string; periodStart: string; replyId: string }, now: Date): Promise<void> {
  // Not for an account deleted since: its counters went with it.
  await knex.raw(
    `INSERT INTO quota_leases (reply_id, user_id, period_start, expires_at)
       SELECT ?::uuid, u.id, ?::date, ? FROM users u WHERE u.id = ?
     ON CONFLICT (reply_id) DO NOTHING`,
    [lease.replyId, lease.periodStart, now, lease.userId],
  );
}
