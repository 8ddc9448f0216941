import type { Knex } from "knex";

/**
 * Issue 31 (M3, L3, I2): secrets the service reads back are stored sealed (server/toolkit/db/secret-box.ts),
 * and an API key records the OAuth grant it was minted through.
 * - email_outbox: a mail's text is sealed while it waits (`text_sealed`) and dropped once an SMTP
 *   server took it; `text` stays only for rows written before (mails already sent lose it now).
 * - idempotency_keys: a stored answer is sealed (`response_sealed`), and the request is known by a
 *   keyed hash. The answers stored in the clear before are dropped: a retry of one could not match
 *   its new keyed hash anyway, and is refused with 409 as a different request.
 * - api_keys.grant_session_id: the OAuth grant (a session with a client) whose token minted the
 *   key, or whose key minted it; revoking the grant revokes the key. Null for a user's own login.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable("email_outbox", (table) => {
    table.text("text").nullable().alter();
    table.text("text_sealed");
  });
  await knex("email_outbox").whereNotNull("sent_at").update({ text: null });
  await knex.schema.alterTable("idempotency_keys", (table) => {
    table.text("response_sealed");
    table.dropColumn("response_body");
  });
  await knex.schema.alterTable("api_keys", (table) => {
    table.uuid("grant_session_id").references("sessions.id").onDelete("CASCADE");
  });
  await knex.raw("CREATE INDEX api_keys_grant_session_id_index ON api_keys (grant_session_id) WHERE grant_session_id IS NOT NULL");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable("api_keys", (table) => {
    table.dropColumn("grant_session_id");
  });
  await knex.schema.alterTable("idempotency_keys", (table) => {
    table.dropColumn("response_sealed");
    table.jsonb("response_body");
  });
  await knex("email_outbox").whereNull("text").update({ text: "" });
  await knex.schema.alterTable("email_outbox", (table) => {
    table.dropColumn("text_sealed");
    table.text("text").notNullable().alter();
  });
}
