import type { Knex } from "knex";

/**
 * Webhooks (DECISIONS: Webhooks, Variant A): registrations with their secret encrypted at rest, and
 * one delivery row per event and webhook, which is the delivery's state (attempts, lease, outcome)
 * and its log. Triggers on the event outbox queue the fan-out job in the transaction that records
 * events, once per statement and only when some event has a webhook that wants it; other events
 * are marked dispatched on the spot, so chats without webhooks pay one indexed lookup and nothing more.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("webhooks", (table) => {
    table.uuid("id").primary();
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    table.text("url").notNullable();
    table.specificType("events", "text[]").notNullable();
    table.text("secret_encrypted").notNullable();
    table.boolean("active").notNullable().defaultTo(true);
    table.integer("consecutive_failures").notNullable().defaultTo(0);
    table.timestamp("disabled_at", { useTz: true });
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.timestamp("updated_at", { useTz: true }).notNullable();
  });
  await knex.raw("CREATE INDEX webhooks_user ON webhooks (user_id, created_at DESC, id DESC)");

  await knex.schema.createTable("webhook_deliveries", (table) => {
    table.uuid("id").primary();
    table.uuid("webhook_id").notNullable().references("webhooks.id").onDelete("CASCADE");
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    // The outbox event's id: the body's `id` and the `webhook-id` header, the same on every attempt.
    table.uuid("event_id").notNullable();
    table.text("event_type").notNullable();
    // The exact bytes sent, so that every attempt and redelivery carries the same body.
    table.text("body").notNullable();
    table.text("status").notNullable();
    table.integer("attempts").notNullable().defaultTo(0);
    table.integer("response_status");
    table.integer("latency_ms");
    table.text("error");
    table.timestamp("next_attempt_at", { useTz: true });
    // Set while a worker is attempting the delivery; a lease left by a crashed worker runs out.
    table.timestamp("locked_until", { useTz: true });
    table.timestamp("last_attempt_at", { useTz: true });
    table.uuid("redelivery_of").references("webhook_deliveries.id").onDelete("SET NULL");
    table.timestamp("created_at", { useTz: true }).notNullable();
  });
  await knex.raw("ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_status CHECK (status IN ('pending', 'succeeded', 'failed'))");
  // Fan-out may run twice for one event (a retried or rescued job): the second finds its rows made.
  await knex.raw("CREATE UNIQUE INDEX webhook_deliveries_event ON webhook_deliveries (webhook_id, event_id) WHERE redelivery_of IS NULL");
  await knex.raw("CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending'");
  await knex.raw("CREATE INDEX webhook_deliveries_log ON webhook_deliveries (webhook_id, created_at DESC, id DESC)");
  await knex.raw("CREATE INDEX webhook_deliveries_age ON webhook_deliveries (created_at)");
  await knex.raw("CREATE INDEX webhook_deliveries_user ON webhook_deliveries (user_id)");

  // Per row: an event nobody subscribed to is dispatched on the spot.
  await knex.raw(`
    CREATE FUNCTION webhooks_outbox_mark() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.dispatched_at IS NULL AND NOT EXISTS (
        SELECT 1 FROM webhooks w WHERE w.user_id = NEW.user_id AND w.active AND NEW.type = ANY (w.events)
      ) THEN
        NEW.dispatched_at := NEW.created_at;
      END IF;
      RETURN NEW;
    END
    $$`);
  await knex.raw("CREATE TRIGGER webhooks_outbox_mark BEFORE INSERT ON event_outbox FOR EACH ROW EXECUTE FUNCTION webhooks_outbox_mark()");
  // Per statement: one fan-out job for whatever the statement left to dispatch, however many rows.
  await knex.raw(`
    CREATE FUNCTION webhooks_outbox_wake() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF EXISTS (SELECT 1 FROM inserted WHERE dispatched_at IS NULL) THEN
        PERFORM graphile_worker.add_job('webhooks_fanout', '{}'::json, max_attempts => 5);
      END IF;
      RETURN NULL;
    END
    $$`);
  await knex.raw(
    "CREATE TRIGGER webhooks_outbox_wake AFTER INSERT ON event_outbox REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION webhooks_outbox_wake()",
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("DROP TRIGGER IF EXISTS webhooks_outbox_wake ON event_outbox");
  await knex.raw("DROP TRIGGER IF EXISTS webhooks_outbox_mark ON event_outbox");
  await knex.raw("DROP FUNCTION IF EXISTS webhooks_outbox_wake()");
  await knex.raw("DROP FUNCTION IF EXISTS webhooks_outbox_mark()");
  await knex.schema.dropTable("webhook_deliveries");
  await knex.schema.dropTable("webhooks");
}
