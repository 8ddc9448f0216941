import type { Knex } from "knex";
import { v7 as uuidv7 } from "uuid";
import { currentTraceparent } from "../tracing/carrier.ts";

/**
 * Event types the service records (DECISIONS: Webhooks). `webhook.disabled` is internal: no
 * webhook can subscribe to it (the contract's event names do not include it).
 */
export type EventType =
  | "conversation.created"
  | "message.created"
  | "message.failed"
  | "subscription.created"
  | "subscription.cancelled"
  | "webhook.disabled"
  // Trust and safety (issue 41): recorded for the account SAFETY_EVENTS_ACCOUNT names.
  | "report.created"
  | "content.taken_down"
  | "account.suspended";

export interface OutboxEvent {
  userId: string;
  type: EventType;
  data: Record<string, unknown>;
  at: Date;
}

/** The `event_outbox` row of an event, for stores that write it in the statement of the change itself. */
export function outboxRow(event: OutboxEvent): Omit<OutboxRecord, "data"> & { data: string } {
  return { ...outboxRecord(event), data: JSON.stringify(event.data) };
}

export interface OutboxRecord {
  id: string;
  user_id: string;
  type: EventType;
  data: Record<string, unknown>;
  created_at: Date;
  /**
   * The `traceparent` of the span that recorded the event, while traces are on: the webhook fan-out
   * job it wakes links to it (migration 0035).
   */
  trace_context: string | null;
}

/** The row with its `data` as an object, for stores that pass rows as one JSON value (rows.ts jsonRows). */
export function outboxRecord(event: OutboxEvent): OutboxRecord {
  return { id: uuidv7(), user_id: event.userId, type: event.type, data: event.data, created_at: event.at, trace_context: currentTraceparent() ?? null };
}

/** The columns of an outbox row, in the order `jsonRows` names them. */
export const OUTBOX_COLUMNS = ["id", "user_id", "type", "data", "created_at", "trace_context"] as const;

/**
 * Records an event in the outbox, inside the caller's transaction so that it exists exactly when
 * the change it describes does. The webhooks area delivers from this table.
 */
export async function recordEvent(knex: Knex | Knex.Transaction, event: OutboxEvent): Promise<void> {
  await knex("event_outbox").insert(outboxRow(event));
}
