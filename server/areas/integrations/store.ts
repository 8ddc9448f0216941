import type { Knex } from "knex";
import type { PlatformName } from "./platforms/types.ts";

export interface IntegrationIssue {
  code: string;
  message: string;
  at: string;
}

export interface IntegrationRow {
  id: string;
  user_id: string;
  persona_id: string;
  platform: PlatformName;
  status: "active" | "inactive";
  guild_id: string | null;
  workspace_id: string | null;
  channel_ids: string[] | null;
  auto_respond: boolean;
  token_encrypted: string;
  secret_encrypted: string | null;
  bot_user_id: string;
  bot_username: string | null;
  message_count: number;
  last_message_at: Date | null;
  last_error: IntegrationIssue | null;
  connected_at: Date;
  updated_at: Date;
}

export type IntegrationChanges = Partial<Pick<IntegrationRow, "status" | "channel_ids" | "auto_respond" | "updated_at">>;

const table = (knex: Knex) => knex<IntegrationRow>("integrations");

/** Answers undefined when the persona already has an integration on the platform, or the bot serves another. */
export async function insertIntegration(knex: Knex, row: IntegrationRow): Promise<IntegrationRow | undefined> {
  const [inserted] = await table(knex).insert(row).onConflict().ignore().returning("*");
  return inserted as IntegrationRow | undefined;
}

/** Which unique rule a refused insert hit: the persona's platform, or the bot. */
export async function conflictOf(knex: Knex, row: Pick<IntegrationRow, "persona_id" | "platform" | "bot_user_id">): Promise<"persona" | "bot" | undefined> {
  if (await table(knex).where({ persona_id: row.persona_id, platform: row.platform }).first("id")) return "persona";
  if (await table(knex).where({ platform: row.platform, bot_user_id: row.bot_user_id }).first("id")) return "bot";
  return undefined;
}

export async function findIntegrationOf(knex: Knex, userId: string, id: string): Promise<IntegrationRow | undefined> {
  return table(knex).where({ id, user_id: userId }).first();
}

export async function findIntegration(knex: Knex, id: string): Promise<IntegrationRow | undefined> {
  return table(knex).where({ id }).first();
}

/** Newest first; the contract's list is not paginated. */
export async function listIntegrationsOf(knex: Knex, userId: string): Promise<IntegrationRow[]> {
  return table(knex).where({ user_id: userId }).orderBy([{ column: "connected_at", order: "desc" }, { column: "id", order: "desc" }]);
}

export async function listIntegrationsOfUsers(knex: Knex, userIds: string[]): Promise<IntegrationRow[]> {
  return table(knex).whereIn("user_id", userIds);
}

export async function updateIntegrationOf(knex: Knex, userId: string, id: string, changes: IntegrationChanges): Promise<IntegrationRow | undefined> {
  const [row] = await table(knex).where({ id, user_id: userId }).update(changes).returning("*");
  return row as IntegrationRow | undefined;
}

export async function deleteIntegrationOf(knex: Knex, userId: string, id: string): Promise<boolean> {
  return (await table(knex).where({ id, user_id: userId }).delete()) > 0;
}

export async function deleteIntegrations(knex: Knex, ids: string[]): Promise<void> {
  if (ids.length) await table(knex).whereIn("id", ids).delete();
}

/** A message the bot answered on the platform. */
export async function countAnswered(knex: Knex, id: string, at: Date): Promise<void> {
  await knex.raw("UPDATE integrations SET message_count = message_count + 1, last_message_at = ?, last_error = NULL WHERE id = ?", [at, id]);
}

/** A message that reached the bot and got no answer, and why. */
export async function recordIssue(knex: Knex, id: string, issue: IntegrationIssue): Promise<void> {
  await knex.raw("UPDATE integrations SET last_error = ?::jsonb, last_message_at = ? WHERE id = ?", [JSON.stringify(issue), issue.at, id]);
}

/** A problem of the bot itself (its gateway refused it), shown in `last_error`; no message was handled. */
export async function noteIssue(knex: Knex, id: string, issue: IntegrationIssue): Promise<void> {
  await knex.raw("UPDATE integrations SET last_error = ?::jsonb WHERE id = ?", [JSON.stringify(issue), id]);
}

/**
 * Takes a platform event id once: true the first time, false for a retry or a second delivery of
 * the same message. Inside the caller's transaction, so the job it queues exists exactly when the
 * id is taken.
 */
export async function takeEvent(knex: Knex, integrationId: string, eventIds: string[], at: Date): Promise<boolean> {
  const rows = eventIds.map((event_id) => ({ integration_id: integrationId, event_id, received_at: at }));
  const taken = await knex("integration_events").insert(rows).onConflict(["integration_id", "event_id"]).ignore().returning("event_id");
  return taken.length === rows.length;
}

/** Event ids are kept long enough to outlast every platform's retries (hours), then forgotten. */
export async function purgeEventsBefore(knex: Knex, before: Date): Promise<number> {
  return knex("integration_events").where("received_at", "<", before).delete();
}

export async function channelConversation(knex: Knex, integrationId: string, channelKey: string): Promise<string | undefined> {
  const row = await knex("integration_channels").where({ integration_id: integrationId, channel_key: channelKey }).first("conversation_id");
  return row?.conversation_id as string | undefined;
}

export async function mapChannel(knex: Knex, integrationId: string, channelKey: string, conversationId: string, at: Date): Promise<void> {
  await knex("integration_channels")
    .insert({ integration_id: integrationId, channel_key: channelKey, conversation_id: conversationId, created_at: at })
    .onConflict(["integration_id", "channel_key"])
    .merge(["conversation_id", "created_at"]);
}

export async function channelsOfIntegrations(knex: Knex, ids: string[]): Promise<{ integration_id: string; channel_key: string; conversation_id: string; created_at: Date }[]> {
  if (!ids.length) return [];
  return knex("integration_channels").whereIn("integration_id", ids).orderBy(["integration_id", "created_at"]);
}

// ---------------------------------------------------------------- gateway leases

/** Active integrations that want a connection held by a worker: forum gateways, and messenger polling when it polls. */
export async function activeGatewayIntegrations(knex: Knex, messengerPolls: boolean): Promise<IntegrationRow[]> {
  return table(knex).where({ status: "active" }).whereIn("platform", messengerPolls ? ["forum", "messenger"] : ["forum"]);
}

/**
 * Takes the lease of each integration nobody holds or whose holder let it run out; answers the ids
 * taken. The database's clock decides, so workers on different machines agree.
 */
export async function acquireLeases(knex: Knex, ids: string[], holder: string, leaseMs: number): Promise<string[]> {
  if (!ids.length) return [];
  const result = await knex.raw<{ rows: { integration_id: string }[] }>(
    `INSERT INTO integration_leases (integration_id, holder, expires_at)
       SELECT i.id, ?, now() + (? * interval '1 millisecond') FROM integrations i WHERE i.id = ANY (?::uuid[])
     ON CONFLICT (integration_id) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
       WHERE integration_leases.expires_at < now() OR integration_leases.holder = EXCLUDED.holder
     RETURNING integration_id`,
    [holder, leaseMs, ids],
  );
  return result.rows.map((row) => row.integration_id);
}

/** Extends the leases `holder` still has; answers the ids it kept (a lease taken over is gone). */
export async function renewLeases(knex: Knex, ids: string[], holder: string, leaseMs: number): Promise<string[]> {
  if (!ids.length) return [];
  const result = await knex.raw<{ rows: { integration_id: string }[] }>(
    `UPDATE integration_leases SET expires_at = now() + (? * interval '1 millisecond')
       WHERE holder = ? AND integration_id = ANY (?::uuid[])
     RETURNING integration_id`,
    [leaseMs, holder, ids],
  );
  return result.rows.map((row) => row.integration_id);
}

export async function releaseLeases(knex: Knex, ids: string[], holder: string): Promise<void> {
  if (ids.length) await knex("integration_leases").where({ holder }).whereIn("integration_id", ids).delete();
}

export async function leaseHolders(knex: Knex): Promise<{ integration_id: string; holder: string; expires_at: Date }[]> {
  return knex("integration_leases").select("integration_id", "holder", "expires_at");
}
