import { Counter, Histogram } from "prom-client";
import { metricsOn, registry, SECONDS } from "./registry.ts";

// Webhook deliveries: how each attempt ended, and how far behind their events deliveries are.

const attempts = new Counter({
  name: "persona_webhook_deliveries_total",
  help: "Webhook delivery attempts, by outcome: delivered (2xx), retry (failed, tried again later), failed (failed its last attempt), skipped (the webhook was paused or disabled since the event).",
  labelNames: ["outcome"] as const,
  registers: [registry],
});

const lag = new Histogram({
  name: "persona_webhook_delivery_lag_seconds",
  help: "From a delivery's creation (its event fanned out to the webhook) to the receiver's 2xx: how far behind receivers hear of events, retries included.",
  buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
  registers: [registry],
});

const durations = new Histogram({
  name: "persona_webhook_attempt_duration_seconds",
  help: "How long a receiver took to answer one delivery attempt (or to fail it), by outcome.",
  labelNames: ["outcome"] as const,
  buckets: [...SECONDS],
  registers: [registry],
});

const OUTCOMES = ["delivered", "retry", "failed", "skipped"] as const;
export type DeliveryOutcome = (typeof OUTCOMES)[number];
for (const outcome of OUTCOMES) attempts.inc({ outcome }, 0);

/**
 * One delivery attempt ended (a one-line call in the webhooks area's delivery): `createdAt` is when
 * the delivery was made, `latencyMs` the receiver's time, when it was asked.
 */
export function webhookAttempted(outcome: DeliveryOutcome, createdAt: Date | undefined, latencyMs: number | null | undefined): void {
  if (!metricsOn()) return;
  attempts.inc({ outcome });
  if (latencyMs !== null && latencyMs !== undefined && outcome !== "skipped") durations.observe({ outcome }, latencyMs / 1000);
  if (outcome === "delivered" && createdAt) lag.observe(Math.max(0, Date.now() - createdAt.getTime()) / 1000);
}
