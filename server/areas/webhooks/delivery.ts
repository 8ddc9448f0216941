import type { Knex } from "knex";
import { getUser } from "../auth/index.ts";
import { recordEvent } from "../../toolkit/events/outbox.ts";
import { addJobIn } from "../../toolkit/db/jobs.ts";
import { webhookAttempted } from "../../toolkit/metrics/webhooks.ts";
import type { Services } from "../../toolkit/services.ts";
import { annotateSpan, inSpan, withTraceHeaders, type SpanSpec } from "../../toolkit/tracing/spans.ts";
import { postOnce } from "./sender.ts";
import { secretBox } from "./secrets.ts";
import { signatureHeaders } from "./signing.ts";
import {
  claimDue, countFailure, fanOutPending, hasPendingWork, recordAttempt, recordSuccesses, resetFailures,
  type ClaimFilter, type ClaimedDelivery, type OutboxEventRow,
} from "./store.ts";

// Delivery (DECISIONS: Webhooks; docs/adr/0208-delivery-from-the-event-outbox-triggers-a-fan-out-job-one.md).
// The `webhook_deliveries` row is the source of truth: a worker leases it for one attempt, and a
// lease left by a worker that died runs out, after which the sweep picks the delivery up again.
// Hence at least once, never exactly once.

export const FANOUT_TASK = "webhooks_fanout";
export const DELIVER_TASK = "webhooks_deliver";
export const SWEEP_TASK = "webhooks_sweep";

/** The first attempt and 3 retries. */
export const MAX_ATTEMPTS = 4;
/** Each retry waits this many times longer than the one before. */
export const BACKOFF_FACTOR = 6;
/** Consecutive failed deliveries after which a webhook is disabled. */
export const DISABLE_AFTER_FAILURES = 100;
/** Deliveries attempted at once by one job. */
const BATCH = 64;

/**
 * Delay before retry `retry` (1 to 3): base × 6^(retry-1), ±25% jitter so that receivers that
 * failed together are not retried together. With the default base of 10 s: about 10 s, 1 min, 6 min.
 */
export function retryDelayMs(baseMs: number, retry: number, random: () => number = Math.random): number {
  return Math.round(baseMs * BACKOFF_FACTOR ** (retry - 1) * (0.75 + 0.5 * random()));
}

/** How long a claimed delivery stays leased: longer than any attempt can take, with room for the database. */
export function leaseMs(services: Services): number {
  return 2 * services.config.webhooks.timeoutMs + 10_000;
}

/** The delivered body: `{id, type, created_at, data}`, serialized once and sent as is on every attempt. */
export function eventBody(event: OutboxEventRow): string {
  return JSON.stringify({ id: event.id, type: event.type, created_at: event.created_at.toISOString(), data: event.data });
}

/** Events fanned out per transaction. */
const FANOUT_BATCH = 500;

/**
 * Fans out every outbox event waiting for it (this worker's share, when several run), then attempts
 * the due deliveries. Woken by the outbox trigger once per inserting statement, so a burst of events
 * costs a few jobs, not one per event.
 */
export async function fanOut(services: Services): Promise<void> {
  const knex = services.db.knex;
  let taken = 0;
  for (;;) {
    const n = await knex.transaction((trx) => fanOutPending(trx, services.now(), FANOUT_BATCH, eventBody));
    taken += n;
    if (n < FANOUT_BATCH) break;
  }
  if (taken > 0) await keepSweepScheduled(services);
  await deliverDue(services);
}

/** Attempts due deliveries (one, or any) until none is left that this call may take. */
export async function deliverDue(services: Services, filter: ClaimFilter = {}, budgetMs = 60_000): Promise<number> {
  const started = Date.now();
  let attempted = 0;
  for (;;) {
    const now = services.now();
    const claimed = await claimDue(services.db.knex, now, new Date(now.getTime() + leaseMs(services)), BATCH, filter);
    if (claimed.length === 0) return attempted;
    const outcomes = await Promise.all(claimed.map((delivery) => inSpan(attemptSpan(delivery), () => attempt(services, delivery))));
    await recordSuccesses(services.db.knex, outcomes.filter((outcome) => outcome !== undefined));
    attempted += claimed.length;
    if (filter.deliveryId || Date.now() - started > budgetMs) return attempted;
  }
}

/**
 * An attempt's span, while traces are on: a child of the job's, linked to the span that recorded
 * the event (its request); the receiver gets its `traceparent`.
 */
function attemptSpan(delivery: ClaimedDelivery): SpanSpec {
  return {
    name: "webhook delivery",
    kind: "producer",
    links: [delivery.trace_context],
    attributes: { "persona.webhook.id": delivery.webhook_id, "persona.webhook.delivery_id": delivery.id, "persona.webhook.event_id": delivery.event_id, "persona.webhook.attempt": delivery.attempts },
  };
}

/** One attempt; a success is answered for the caller to record with the rest of its batch, anything else is recorded here. */
async function attempt(services: Services, delivery: ClaimedDelivery): Promise<{ id: string; status: number; latencyMs: number } | undefined> {
  const knex = services.db.knex;
  const { config } = services;
  if (!delivery.active) {
    // Paused or disabled since the event: not sent, and not counted as the receiver's failure.
    await recordAttempt(knex, delivery.id, { status: "failed", responseStatus: null, latencyMs: null, error: "webhook inactive", nextAttemptAt: null });
    webhookAttempted("skipped", delivery.created_at, null);
    return undefined;
  }
  let result;
  try {
    const secret = (await secretBox(knex, config.secretsKey)).open(delivery.secret_encrypted);
    const headers = withTraceHeaders(signatureHeaders(secret, delivery.event_id, delivery.body, new Date()));
    result = await postOnce(new URL(delivery.url), delivery.body, headers, { timeoutMs: config.webhooks.timeoutMs, allowPrivate: config.webhooks.allowPrivateUrls });
  } catch (error) {
    services.log.error({ err: error, delivery_id: delivery.id }, "webhook delivery could not be attempted");
    result = { ok: false, status: null, latencyMs: 0, error: "internal error" };
  }
  annotateSpan({ "http.response.status_code": result.status ?? undefined, "persona.webhook.delivered": result.ok }, result.ok ? undefined : (result.error ?? "not delivered"));
  webhookAttempted(result.ok ? "delivered" : delivery.attempts < MAX_ATTEMPTS ? "retry" : "failed", delivery.created_at, result.latencyMs);
  if (result.ok) {
    if (delivery.consecutive_failures > 0) await resetFailures(knex, delivery.webhook_id);
    return { id: delivery.id, status: result.status!, latencyMs: result.latencyMs };
  }
  const outcome = { responseStatus: result.status, latencyMs: result.latencyMs, error: result.error };
  if (delivery.attempts < MAX_ATTEMPTS) {
    const nextAttemptAt = new Date(services.now().getTime() + retryDelayMs(config.webhooks.retryBaseMs, delivery.attempts));
    await knex.transaction(async (trx) => {
      await recordAttempt(trx, delivery.id, { status: "pending", nextAttemptAt, ...outcome });
      await addJobIn(trx, DELIVER_TASK, { delivery_id: delivery.id }, { runAt: nextAttemptAt, maxAttempts: 3 });
    });
    return undefined;
  }
  const disabled = await knex.transaction(async (trx) => {
    await recordAttempt(trx, delivery.id, { status: "failed", nextAttemptAt: null, ...outcome });
    const { disabledNow, failures } = await countFailure(trx, delivery.webhook_id, DISABLE_AFTER_FAILURES, services.now());
    if (disabledNow) {
      await recordEvent(trx, {
        userId: delivery.user_id,
        type: "webhook.disabled",
        data: { webhook_id: delivery.webhook_id, url: delivery.url, consecutive_failures: failures },
        at: services.now(),
      });
    }
    return disabledNow;
  });
  if (disabled) await tellOwner(services, delivery);
  return undefined;
}

async function tellOwner(services: Services, delivery: ClaimedDelivery): Promise<void> {
  services.log.warn({ webhook_id: delivery.webhook_id }, "webhook disabled after consecutive failed deliveries");
  try {
    const user = await getUser(services, delivery.user_id);
    await services.providers.email.send({
      to: user.email,
      kind: "webhook_disabled",
      subject: "A Persona webhook was disabled",
      text: [
        `Your webhook ${delivery.url} (id ${delivery.webhook_id}) failed ${DISABLE_AFTER_FAILURES} deliveries in a row and has been disabled.`,
        "",
        "Each event was tried 4 times over several minutes. Events that happen while it is disabled are not delivered later.",
        "Once the endpoint answers 2xx again, turn the webhook back on with PUT /v1/webhooks/" + delivery.webhook_id + ' and {"active": true}.',
        "The delivery log (GET /v1/webhooks/" + delivery.webhook_id + "/deliveries) shows what the endpoint answered.",
      ].join("\n"),
    });
  } catch (error) {
    services.log.error({ err: error, webhook_id: delivery.webhook_id }, "could not e-mail the owner of a disabled webhook");
  }
}

let sweepScheduledAt = 0;

/**
 * Makes sure a sweep will run once the leases taken now have run out, so that work of a worker
 * killed mid-delivery is picked up again soon rather than at the next scheduled sweep. One keyed
 * job: scheduling it again keeps the earlier time. At most once a second per process.
 */
export async function keepSweepScheduled(services: Services, knex: Knex = services.db.knex): Promise<void> {
  if (Date.now() - sweepScheduledAt < 1_000) return;
  sweepScheduledAt = Date.now();
  await knex.raw("SELECT graphile_worker.add_job(?, '{}'::json, run_at => ?, job_key => ?, job_key_mode => 'preserve_run_at')", [
    SWEEP_TASK,
    new Date(services.now().getTime() + leaseMs(services) + 1_000),
    SWEEP_TASK,
  ]);
}

/**
 * Picks up whatever a dead worker left: events not fanned out (a fan-out job it held stays locked
 * in the queue), and due deliveries whose lease ran out. Schedules itself again while anything is
 * still in flight.
 */
export async function sweep(services: Services): Promise<void> {
  const knex = services.db.knex;
  while ((await knex.transaction((trx) => fanOutPending(trx, services.now(), FANOUT_BATCH, eventBody))) === FANOUT_BATCH);
  const attempted = await deliverDue(services);
  if (attempted) services.log.info({ attempted }, "webhook sweep attempted deliveries");
  if (await hasPendingWork(knex)) {
    sweepScheduledAt = 0;
    await keepSweepScheduled(services);
  }
}
