import type { components } from "../../../generated/openapi.d.ts";
import type { DeliveryRow, WebhookRow } from "./store.ts";

// Webhook rows as the contract shows them; the secret never leaves except in `toCreated`.

type Schemas = components["schemas"];

export function toWebhook(row: WebhookRow): Schemas["Webhook"] {
  return {
    id: row.id,
    url: row.url,
    events: row.events as Schemas["WebhookEventType"][],
    active: row.active,
    created_at: row.created_at.toISOString(),
  };
}

export function toCreated(row: WebhookRow, secret: string): Schemas["WebhookCreated"] {
  return { ...toWebhook(row), secret, active: true };
}

export function toDelivery(row: DeliveryRow): Schemas["WebhookDelivery"] {
  return {
    id: row.id,
    webhook_id: row.webhook_id,
    event_id: row.event_id,
    event_type: row.event_type as Schemas["WebhookEventType"],
    status: row.status,
    attempts: row.attempts,
    response_status: row.response_status,
    latency_ms: row.latency_ms,
    error: row.error,
    next_attempt_at: row.status === "pending" && row.next_attempt_at ? row.next_attempt_at.toISOString() : null,
    last_attempt_at: row.last_attempt_at?.toISOString() ?? null,
    redelivery_of: row.redelivery_of,
    created_at: row.created_at.toISOString(),
  };
}
