import { GeneratedIntegrations } from "../generated/resources.ts";

/**
 * Integrations: a persona's bot on a forum server, a messenger or a workspace. The bot token is
 * checked with the platform when connecting and is never returned. Every method is generated from
 * the contract (GeneratedIntegrations).
 *
 * @example
 * const bot = await client.integrations.connectMessenger({ persona_id: personaId, bot_token: process.env.BOT_TOKEN! });
 * const { test_result } = await client.integrations.test(bot.id);
 */
export class Integrations extends GeneratedIntegrations {}
