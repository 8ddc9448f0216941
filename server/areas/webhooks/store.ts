import type { Knex } from "knex";
import { v7 as uuidv7 } from "uuid";
import { offsetPage } from "../../toolkit/db/paging.ts";
import type { PageWindow } from "../../toolkit/http/paging.ts";

export interface WebhookRow {
  id: string;
  user_id: string;
  url: string;
  events: string[];
  secret_encrypted: string;
  active: boolean;
  consecutive_failures: number;
  disabled_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export type DeliveryStatus = "pending" | "succeeded" | "failed";

export interface DeliveryRow {
  id: string;
  webhook_id: string;
  user_id: string;
  event_id: string;
  event_type: string;
  body: string;
  status: DeliveryStatus;
  attempts: number;
  response_status: number | null;
  latency_ms: number | null;
  error: string | null;
  next_attempt_at: Date | null;
  locked_until: Date | null;
  last_attempt_at: Date | null;
  redelivery_of: string | null;
  created_at: Date;
}

/** A delivery claimed for an attempt, with what sending it needs. */
export interface ClaimedDelivery {
  id: string;
  webhook_id: string;
  user_id: string;
  event_id: string;
  body: string;
  attempts: number;
  url: string;
  secret_encrypted: string;
  active: boolean;
  consecutive_failures: number;
  /** When the delivery was made (its event fanned out, or a redelivery asked for). */
  created_at: Date;
  /** The `traceparent` of the span that recorded its event (null while traces were off): the attempt's span links to it. */
  trace_context: string | null;
}

// ------------------------------------------------------------------ registrations

export async function insertWebhook(knex: Knex, row: WebhookRow): Promise<WebhookRow> {
  const [inserted] = await knex("webhooks").insert(row).returning("*");
  return inserted as WebhookRow;
}

export async function listWebhooksOf(knex: Knex, userId: string): Promise<WebhookRow[]> {
  return knex("webhooks").where({ user_id: userId }).orderBy([{ column: "created_at", order: "desc" }, { column: "id", order: "desc" }]);
}

export async function countWebhooksOf(knex: Knex, userId: string): Promise<number> {
  const [row] = await knex("webhooks").where({ user_id: userId }).count<{ count: number }[]>({ count: "*" });
  return Number(row?.count ?? 0);
}

export async function findWebhookOf(knex: Knex, userId: string, id: string): Promise<WebhookRow | undefined> {
  return knex("webhooks").where({ id, user_id: userId }).first();
}

export type WebhookChanges = Partial<Pick<WebhookRow, "url" | "events" | "active" | "consecutive_failures" | "disabled_at" | "updated_at">>;

export async function updateWebhookOf(knex: Knex, userId: string, id: string, changes: WebhookChanges): Promise<WebhookRow | undefined> {
  const [row] = await knex("webhooks").where({ id, user_id: userId }).update(changes).returning("*");
  return row as WebhookRow | undefined;
}

export async function deleteWebhookOf(knex: Knex, userId: string, id: string): Promise<boolean> {
  return (await knex("webhooks").where({ id, user_id: userId }).delete()) > 0;
}

// ------------------------------------------------------------------ delivery log

export async function pageDeliveries(knex: Knex, webhookId: string, window: PageWindow): Promise<{ rows: DeliveryRow[]; total: number }> {
  return offsetPage<DeliveryRow>(knex("webhook_deliveries").where({ webhook_id: webhookId }), "created_at DESC, id DESC", window);
}

export async function findDelivery(knex: Knex, webhookId: string, id: string): Promise<DeliveryRow | undefined> {
  return knex("webhook_deliveries").where({ id, webhook_id: webhookId }).first();
}

/** A new pending delivery of the same event and body as `original`. */
export async function insertRedelivery(knex: Knex, original: DeliveryRow, now: Date): Promise<DeliveryRow> {
  const [row] = await knex("webhook_deliveries")
    .insert({
      id: uuidv7(),
      webhook_id: original.webhook_id,
      user_id: original.user_id,
      event_id: original.event_id,
      event_type: original.event_type,
      body: original.body,
      status: "pending",
      attempts: 0,
      next_attempt_at: now,
      redelivery_of: original.id,
      created_at: now,
    })
    .returning("*");
  return row as DeliveryRow;
}

// ------------------------------------------------------------------ fan-out

export interface OutboxEventRow {
  id: string;
  user_id: string;
  type: string;
  data: Record<string, unknown>;
  created_at: Date;
}

/**
 * Fans out up to `limit` outbox events not dispatched yet (skipping those another worker holds):
 * one delivery per event and active webhook of its user subscribed to its type, then marks the
 * events dispatched. Running it again over the same events adds nothing. `body` turns an event
 * into the exact bytes every attempt will send. Answers how many events it took.
 */
export async function fanOutPending(trx: Knex.Transaction, now: Date, limit: number, body: (event: OutboxEventRow) => string): Promise<number> {
  const events = (await trx("event_outbox")
    .select("id", "user_id", "type", "data", "created_at")
    .whereNull("dispatched_at")
    .orderBy("created_at")
    .limit(limit)
    .forUpdate()
    .skipLocked()) as OutboxEventRow[];
  if (events.length === 0) return 0;
  const users = [...new Set(events.map((event) => event.user_id))];
  const hooks = (await trx("webhooks").select("id", "user_id", "events").where({ active: true }).whereIn("user_id", users)) as Pick<WebhookRow, "id" | "user_id" | "events">[];
  const rows = events.flatMap((event) => {
    const wanted = hooks.filter((hook) => hook.user_id === event.user_id && hook.events.includes(event.type));
    if (wanted.length === 0) return [];
    const text = body(event);
    return wanted.map((hook) => ({
      id: uuidv7(),
      webhook_id: hook.id,
      user_id: event.user_id,
      event_id: event.id,
      event_type: event.type,
      body: text,
      status: "pending",
      attempts: 0,
      next_attempt_at: now,
      created_at: now,
    }));
  });
  for (let start = 0; start < rows.length; start += 500) {
    await trx.raw("? ON CONFLICT (webhook_id, event_id) WHERE redelivery_of IS NULL DO NOTHING", [trx("webhook_deliveries").insert(rows.slice(start, start + 500))]);
  }
  await trx("event_outbox").whereIn("id", events.map((event) => event.id)).update({ dispatched_at: now });
  return events.length;
}

// ------------------------------------------------------------------ attempts

export interface ClaimFilter {
  deliveryId?: string;
}

/**
 * Leases up to `limit` due deliveries for one attempt each and counts the attempt. A delivery
 * leased by another worker is skipped until its lease runs out (the worker may have died).
 */
export async function claimDue(knex: Knex, now: Date, leaseUntil: Date, limit: number, filter: ClaimFilter = {}): Promise<ClaimedDelivery[]> {
  const due = knex("webhook_deliveries")
    .select("id")
    .where({ status: "pending" })
    .where("next_attempt_at", "<=", now)
    .where((q) => q.whereNull("locked_until").orWhere("locked_until", "<", now))
    .orderBy("next_attempt_at")
    .limit(limit)
    .forUpdate()
    .skipLocked();
  if (filter.deliveryId) due.where({ id: filter.deliveryId });
  const result = await knex.raw(
    `UPDATE webhook_deliveries d
        SET locked_until = ?, attempts = d.attempts + 1, last_attempt_at = ?
       FROM webhooks w
      WHERE d.id IN (?) AND w.id = d.webhook_id
  RETURNING d.id, d.webhook_id, d.user_id, d.event_id, d.body, d.attempts, d.created_at, w.url, w.secret_encrypted, w.active, w.consecutive_failures,
            (SELECT e.trace_context FROM event_outbox e WHERE e.id = d.event_id) AS trace_context`,
    [leaseUntil, now, due],
  );
  return (result as { rows: ClaimedDelivery[] }).rows;
}

export interface AttemptRecord {
  status: DeliveryStatus;
  responseStatus: number | null;
  latencyMs: number | null;
  error: string | null;
  nextAttemptAt: Date | null;
}

export async function recordAttempt(knex: Knex, id: string, attempt: AttemptRecord): Promise<void> {
  await knex("webhook_deliveries").where({ id, status: "pending" }).update({
    status: attempt.status,
    response_status: attempt.responseStatus,
    latency_ms: attempt.latencyMs,
    error: attempt.error,
    next_attempt_at: attempt.nextAttemptAt,
    locked_until: null,
  });
}

/** Marks many deliveries succeeded in one statement (the common case of a batch). */
export async function recordSuccesses(knex: Knex, successes: { id: string; status: number; latencyMs: number }[]): Promise<void> {
  if (successes.length === 0) return;
  const values = successes.map(() => "(?::uuid, ?::int, ?::int)").join(", ");
  await knex.raw(
    `UPDATE webhook_deliveries d
        SET status = 'succeeded', response_status = v.status, latency_ms = v.latency, error = NULL, next_attempt_at = NULL, locked_until = NULL
       FROM (VALUES ${values}) AS v (id, status, latency)
      WHERE d.id = v.id AND d.status = 'pending'`,
    successes.flatMap((success) => [success.id, success.status, success.latencyMs]),
  );
}

/** A success ends a run of failures; written only when there was one, to keep the hot path light. */
export async function resetFailures(knex: Knex, webhookId: string): Promise<void> {
  await knex("webhooks").where({ id: webhookId }).where("consecutive_failures", ">", 0).update({ consecutive_failures: 0 });
}

/**
 * Counts a failed delivery against its webhook and disables the webhook when the count reaches
 * `limit`. Answers whether this failure is the one that disabled it (exactly one caller sees that).
 */
export async function countFailure(knex: Knex, webhookId: string, limit: number, now: Date): Promise<{ disabledNow: boolean; failures: number }> {
  const result = await knex.raw(
    `UPDATE webhooks
        SET consecutive_failures = consecutive_failures + 1,
            active = CASE WHEN consecutive_failures + 1 >= ? THEN false ELSE active END,
            disabled_at = CASE WHEN active AND consecutive_failures + 1 >= ? THEN ? ELSE disabled_at END
      WHERE id = ?
  RETURNING consecutive_failures, active, disabled_at = ? AS disabled_now`,
    [limit, limit, now, webhookId, now],
  );
  const row = (result as { rows: { consecutive_failures: number; disabled_now: boolean | null }[] }).rows[0];
  return { disabledNow: Boolean(row?.disabled_now), failures: row?.consecutive_failures ?? 0 };
}

/** Whether anything is still in flight: a pending delivery, or an event not fanned out yet. */
export async function hasPendingWork(knex: Knex): Promise<boolean> {
  const result = await knex.raw(
    `SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE status = 'pending')
         OR EXISTS (SELECT 1 FROM event_outbox WHERE dispatched_at IS NULL) AS pending`,
  );
  return Boolean((result as { rows: { pending: boolean }[] }).rows[0]?.pending);
}

/** Deletes finished deliveries created before `before` (the 30-day log). */
export async function purgeDeliveriesBefore(knex: Knex, before: Date): Promise<number> {
  return knex("webhook_deliveries").where("created_at", "<", before).whereNot({ status: "pending" }).delete();
}
