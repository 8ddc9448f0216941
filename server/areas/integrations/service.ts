import { randomBytes } from "node:crypto";
import { v7 as uuidv7 } from "uuid";
import type { components } from "../../../generated/openapi.d.ts";
import { publicBaseUrl } from "../../toolkit/config.ts";
import { conflict, invalidField, notFound, upstreamFailed } from "../../toolkit/http/error-catalogue.ts";
import { isUuid } from "../../toolkit/http/text.ts";
import { requireOwnPersona } from "../personas/index.ts";
import type { Services } from "../../toolkit/services.ts";
import { secretBox } from "../webhooks/index.ts";
import { platformClient } from "./platforms/index.ts";
import { PlatformRefusal, PlatformUnavailable, type BotAccount, type PlatformName } from "./platforms/types.ts";
import {
  conflictOf, deleteIntegrationOf, findIntegrationOf, insertIntegration, listIntegrationsOf, updateIntegrationOf,
  type IntegrationChanges, type IntegrationRow,
} from "./store.ts";
import type { TestOutcome } from "./views.ts";

type Schemas = components["schemas"];
type ConnectBody = Schemas["ForumConnect"] | Schemas["MessengerConnect"] | Schemas["WorkspaceConnect"];

const fieldError = (path: string, message: string) => invalidField(path, message);

/** The caller's integration; another user's, an unknown id or a malformed one are all 404. */
export async function requireOwnIntegration(services: Services, userId: string, id: string): Promise<IntegrationRow> {
  const row = isUuid(id) ? await findIntegrationOf(services.db.knex, userId, id) : undefined;
  if (!row) throw notFound("Integration");
  return row;
}

/** Where the platforms send an integration's callbacks (PUBLIC_BASE_URL must reach this service). */
export function callbackUrl(services: Services, row: Pick<IntegrationRow, "id" | "platform">): string | undefined {
  const base = `${publicBaseUrl(services.config)}/v1/integrations/${row.id}`;
  if (row.platform === "messenger") return `${base}/messenger/updates`;
  if (row.platform === "workspace") return `${base}/workspace/events`;
  return undefined;
}

/**
 * Whether messenger bots long-poll from a worker instead of receiving webhooks: TELEGRAM_UPDATES,
 * else polling unless the platform can call this server back over HTTPS.
 */
export function messengerPolls(services: Services): boolean {
  const mode = services.config.integrations.telegramUpdates;
  return mode ? mode === "polling" : !publicBaseUrl(services.config).startsWith("https://");
}

/** The bot token, decrypted; only ever handed to a platform client. */
export async function tokenOf(services: Services, row: IntegrationRow): Promise<string> {
  return (await secretBox(services.db.knex, services.config.secretsKey)).open(row.token_encrypted);
}

/** The messenger webhook's secret token, or the workspace app's signing secret (its own, else the server's). */
export async function callbackSecretOf(services: Services, row: IntegrationRow): Promise<string | undefined> {
  if (row.secret_encrypted) return (await secretBox(services.db.knex, services.config.secretsKey)).open(row.secret_encrypted);
  return row.platform === "workspace" ? services.config.integrations.slackSigningSecret : undefined;
}

/** A platform failure during a request: a refusal of what the caller sent is theirs (400), the rest 502. */
function upstream(error: unknown, refusedField?: string): never {
  if (error instanceof PlatformRefusal && refusedField) throw fieldError(refusedField, `was refused by the platform (${error.message})`);
  if (error instanceof PlatformRefusal || error instanceof PlatformUnavailable) throw upstreamFailed(error.message);
  throw error;
}

/** Checks the token (and the guild or workspace it must serve) with the platform. */
async function checkBot(services: Services, platform: PlatformName, token: string, body: ConnectBody): Promise<BotAccount> {
  const settings = services.config.integrations;
  let bot: BotAccount;
  try {
    bot = await (await platformClient(settings, platform, token, { retries: 0 })).whoAmI();
  } catch (error) {
    upstream(error, "/body/bot_token");
  }
  if (platform === "forum" && "guild_id" in body) {
    const { DiscordClient } = await import("./platforms/discord.ts");
    const inGuild = await new DiscordClient(settings, token, { retries: 0 }).inGuild(body.guild_id).catch((error: unknown) => upstream(error));
    if (!inGuild) throw fieldError("/body/guild_id", "is not a server this bot is a member of");
  }
  if (platform === "workspace" && "workspace_id" in body && bot.teamId !== body.workspace_id) {
    throw fieldError("/body/workspace_id", `does not match the workspace of this bot token (${bot.teamId})`);
  }
  return bot;
}

/**
 * Connects a persona of the caller's to a platform: the token is checked with the platform first,
 * then stored encrypted; a messenger bot's webhook is pointed at this service with a fresh secret.
 */
export async function connectIntegration(services: Services, userId: string, platform: PlatformName, body: ConnectBody): Promise<IntegrationRow> {
  const persona = await requireOwnPersona(services, userId, body.persona_id);
  const signingSecret = platform === "workspace" ? ("signing_secret" in body ? body.signing_secret : undefined) : undefined;
  if (platform === "workspace" && !signingSecret && !services.config.integrations.slackSigningSecret) {
    throw fieldError("/body/signing_secret", "is required: this server has no SLACK_SIGNING_SECRET for workspace apps");
  }
  const bot = await checkBot(services, platform, body.bot_token, body);
  const { knex } = services.db;
  const box = await secretBox(knex, services.config.secretsKey);
  const polls = platform === "messenger" && messengerPolls(services);
  const webhookSecret = platform === "messenger" ? (polls ? undefined : randomBytes(32).toString("base64url")) : signingSecret;
  const now = services.now();
  const row: IntegrationRow = {
    id: uuidv7(),
    user_id: userId,
    persona_id: persona.id,
    platform,
    status: "active",
    guild_id: "guild_id" in body ? body.guild_id : null,
    workspace_id: "workspace_id" in body ? body.workspace_id : null,
    channel_ids: "channel_ids" in body ? [...new Set(body.channel_ids)] : null,
    auto_respond: false,
    token_encrypted: box.seal(body.bot_token),
    secret_encrypted: webhookSecret ? box.seal(webhookSecret) : null,
    bot_user_id: bot.id,
    bot_username: bot.username,
    message_count: 0,
    last_message_at: null,
    last_error: null,
    connected_at: now,
    updated_at: now,
  };
  const inserted = await insertIntegration(knex, row);
  if (!inserted) {
    const taken = await conflictOf(knex, row);
    throw conflict(taken === "bot" ? "This bot is already connected to a persona" : `This persona already has a ${platform} integration`);
  }
  if (platform === "messenger") {
    try {
      const { TelegramClient } = await import("./platforms/telegram.ts");
      const telegram = new TelegramClient(services.config.integrations, body.bot_token, { retries: 0 });
      // Polling: the platform serves no getUpdates while a webhook is set; a worker picks the bot up.
      if (polls) await telegram.deleteWebhook();
      else await telegram.setWebhook(callbackUrl(services, inserted)!, webhookSecret!);
    } catch (error) {
      await deleteIntegrationOf(knex, userId, inserted.id);
      if (error instanceof PlatformRefusal) {
        throw upstreamFailed(`${error.message}; the webhook URL must be a public HTTPS address (PUBLIC_BASE_URL)`);
      }
      upstream(error);
    }
  }
  return inserted;
}

export async function listIntegrations(services: Services, userId: string): Promise<IntegrationRow[]> {
  return listIntegrationsOf(services.db.knex, userId);
}

/** Changes only the supplied fields; `active: false` stops the bot answering (its callbacks are then acknowledged and dropped). */
export async function updateIntegration(services: Services, userId: string, id: string, body: Schemas["IntegrationUpdate"]): Promise<IntegrationRow> {
  const current = await requireOwnIntegration(services, userId, id);
  if (body.channel_ids !== undefined && current.platform === "messenger") {
    throw fieldError("/body/channel_ids", "applies to forum and workspace integrations only (a messenger bot answers in every chat it is in)");
  }
  const changes: IntegrationChanges = {};
  if (body.channel_ids !== undefined) changes.channel_ids = [...new Set(body.channel_ids)];
  if (body.active !== undefined) changes.status = body.active ? "active" : "inactive";
  if (body.auto_respond !== undefined) changes.auto_respond = body.auto_respond;
  if (Object.keys(changes).length === 0) return current;
  const row = await updateIntegrationOf(services.db.knex, userId, current.id, { ...changes, updated_at: services.now() });
  if (!row) throw notFound("Integration");
  return row;
}

/**
 * Disconnects: a messenger bot's webhook is removed at the platform (a platform that is down does
 * not keep the integration alive: the failure is logged), and the row goes, which makes the worker
 * holding a forum bot's gateway session close it at its next lease renewal.
 */
export async function deleteIntegration(services: Services, userId: string, id: string): Promise<string> {
  const current = await requireOwnIntegration(services, userId, id);
  await disconnect(services, current);
  if (!(await deleteIntegrationOf(services.db.knex, userId, current.id))) throw notFound("Integration");
  return current.id;
}

/** Undoes what lives at the platform. Never throws: the failure is logged without secrets. */
export async function disconnect(services: Services, row: IntegrationRow): Promise<void> {
  if (row.platform !== "messenger") return;
  try {
    const { TelegramClient } = await import("./platforms/telegram.ts");
    await new TelegramClient(services.config.integrations, await tokenOf(services, row), { retries: 0 }).deleteWebhook();
  } catch (error) {
    services.log.warn({ integration: row.id, reason: (error as Error).message }, "could not remove the messenger webhook");
  }
}

/**
 * Sends a test message through the bot: to the first channel on forum and workspace; on messenger,
 * which has no channel to post to, the token is checked. A refusal is `success: false`; a platform
 * that cannot be reached is 502.
 */
export async function testIntegration(services: Services, userId: string, id: string): Promise<{ row: IntegrationRow; outcome: TestOutcome }> {
  const row = await requireOwnIntegration(services, userId, id);
  const persona = await requireOwnPersona(services, userId, row.persona_id);
  const client = await platformClient(services.config.integrations, row.platform, await tokenOf(services, row), { retries: 1 });
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    if (row.platform === "messenger") {
      await client.whoAmI();
      return { row, outcome: { success: true, latencyMs: elapsed(), messageId: null, deliveredAt: null, error: null } };
    }
    const messageId = await client.send(row.channel_ids![0]!, `Test message from ${persona.name} (Persona): the bot is connected.`);
    return { row, outcome: { success: true, latencyMs: elapsed(), messageId, deliveredAt: services.now(), error: null } };
  } catch (error) {
    if (error instanceof PlatformRefusal) return { row, outcome: { success: false, latencyMs: elapsed(), messageId: null, deliveredAt: null, error: error.message } };
    upstream(error);
  }
}
