import type { Knex } from "knex";

/**
 * Issue 12: a reserved message's lease is a row here, not a graphile-worker job per send. Queuing
 * that job (add_job) was most of the chat statement's own time, and its unconditional NOTIFY woke
 * the worker to poll for jobs on every send. A sweep gives back the messages of expired leases
 * whose replies were never stored. Release jobs still queued move here.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("quota_leases", (table) => {
    table.uuid("reply_id").primary();
    table.uuid("user_id").notNullable().references("id").inTable("users").onDelete("CASCADE");
    table.date("period_start").notNullable();
    table.timestamp("expires_at", { useTz: true }).notNullable().index();
  });
  await knex.raw(`DO $$ BEGIN
    IF to_regclass('graphile_worker._private_jobs') IS NOT NULL THEN
      WITH moved AS (
        DELETE FROM graphile_worker._private_jobs j USING graphile_worker._private_tasks t
         WHERE t.id = j.task_id AND t.identifier = 'quota_release' AND j.locked_at IS NULL
        RETURNING j.payload, j.run_at)
      INSERT INTO quota_leases (reply_id, user_id, period_start, expires_at)
        SELECT (payload->>'reply_id')::uuid, (payload->>'user_id')::uuid, (payload->>'period_start')::date, run_at FROM moved
         WHERE EXISTS (SELECT 1 FROM users u WHERE u.id = (payload->>'user_id')::uuid)
        ON CONFLICT DO NOTHING;
    END IF;
  END $$`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable("quota_leases");
}
