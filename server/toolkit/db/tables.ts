/**
 * The tables the toolkit owns: what knows no area (installation secrets, stored idempotent
 * answers, the event and e-mail outboxes, rate-limit buckets, the local payment provider's
 * objects). Areas reach them through the toolkit's functions (test/foundation/table-ownership.test.ts).
 */
export const toolkitTables = ["instance_secrets", "idempotency_keys", "event_outbox", "email_outbox", "rate_limits", "local_payment_objects"] as const;
