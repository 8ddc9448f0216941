import type { Knex } from "knex";

/**
 * Traces across the event outbox (issue 39, docs/adr/0346): an event's row keeps the `traceparent`
 * of the span that recorded it (null while traces are off), and the trigger that wakes the webhook
 * fan-out passes it on in the job's payload under `_traceparent` (server/toolkit/tracing/carrier.ts
 * `JOB_TRACE_KEY`), where every job queued by the service carries it: the fan-out's span then links
 * to the request whose events it delivers. The column is nullable without a default: adding it
 * rewrites nothing.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw("ALTER TABLE event_outbox ADD COLUMN trace_context text");
  await knex.raw(`
    CREATE OR REPLACE FUNCTION webhooks_outbox_wake() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      waiting boolean;
      traced text;
    BEGIN
      SELECT true, trace_context INTO waiting, traced FROM inserted WHERE dispatched_at IS NULL ORDER BY trace_context IS NULL LIMIT 1;
      IF waiting THEN
        PERFORM graphile_worker.add_job('webhooks_fanout', CASE WHEN traced IS NULL THEN '{}'::json ELSE json_build_object('_traceparent', traced) END, max_attempts => 5);
      END IF;
      RETURN NULL;
    END
    $$`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE OR REPLACE FUNCTION webhooks_outbox_wake() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF EXISTS (SELECT 1 FROM inserted WHERE dispatched_at IS NULL) THEN
        PERFORM graphile_worker.add_job('webhooks_fanout', '{}'::json, max_attempts => 5);
      END IF;
      RETURN NULL;
    END
    $$`);
  await knex.raw("ALTER TABLE event_outbox DROP COLUMN trace_context");
}
