import type { Knex } from "knex";
import { v7 as uuidv7 } from "uuid";

/** Event types the service records (DECISIONS: Webhooks). */
export type EventType = "conversation.created" | "message.created" | "message.failed" | "subscription.created" | "subscription.cancelled";

/**
 * Records an event in the outbox, inside the caller's transaction so that it exists exactly when
 * the change it describes does. The webhooks area delivers from this table.
 */
export async function recordEvent(knex: Knex | Knex.Transaction, event: { userId: string; type: EventType; data: Record<string, unknown>; at: Date }): Promise<void> {
  await knex("event_outbox").insert({ id: uuidv7(), user_id: event.userId, type: event.type, data: event.data, created_at: event.at });
}
