import { DiscordAPIError, HTTPError, RateLimitError, REST } from "@discordjs/rest";
import { Routes, type RESTGetAPIGuildResult, type RESTGetAPIUserResult, type RESTPostAPIChannelMessageResult } from "discord-api-types/v10";
import { PlatformRefusal, PlatformUnavailable, type BotAccount, type PlatformClient, type PlatformSettings } from "./types.ts";

/**
 * The forum platform (Discord) through @discordjs/rest, which waits out 429s by their `retry_after`
 * and retries 5xx itself. No sweep timers: each client lives for a few calls.
 */
export function discordRest(settings: PlatformSettings, token: string, retries = 3): REST {
  return new REST({
    api: settings.discordApiUrl.replace(/(?<!\/)\/+$/, ""),
    version: "10",
    timeout: settings.timeoutMs,
    retries,
    hashSweepInterval: 0,
    handlerSweepInterval: 0,
  }).setToken(token);
}

export class DiscordClient implements PlatformClient {
  readonly #rest: REST;

  constructor(settings: PlatformSettings, token: string, options: { retries?: number } = {}) {
    this.#rest = discordRest(settings, token, options.retries);
  }

  async whoAmI(): Promise<BotAccount> {
    const user = (await call(() => this.#rest.get(Routes.user("@me")))) as Partial<RESTGetAPIUserResult> | null;
    // An answer is checked before it is stored: a proxy or a broken platform may say 200 with anything.
    if (typeof user?.id !== "string" || !user.id) throw new PlatformUnavailable("Discord answered /users/@me without a user id");
    return { id: user.id, username: typeof user.username === "string" ? user.username : null };
  }

  /** Whether the bot is a member of the guild (the platform hides other guilds: 403 or 404). */
  async inGuild(guildId: string): Promise<boolean> {
    try {
      (await call(() => this.#rest.get(Routes.guild(guildId)))) as RESTGetAPIGuildResult;
      return true;
    } catch (error) {
      if (error instanceof PlatformRefusal && (error.status === 403 || error.status === 404)) return false;
      throw error;
    }
  }

  async send(channelId: string, text: string, replyTo?: string): Promise<string> {
    const body = { content: text, ...(replyTo ? { message_reference: { message_id: replyTo, fail_if_not_exists: false } } : {}), allowed_mentions: { parse: [] } };
    const message = (await call(() => this.#rest.post(Routes.channelMessages(channelId), { body }))) as Partial<RESTPostAPIChannelMessageResult> | null;
    if (typeof message?.id !== "string") throw new PlatformUnavailable("Discord answered a sent message without its id");
    return message.id;
  }
}

async function call<T>(request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (error) {
    if (error instanceof DiscordAPIError) {
      if (error.status >= 500) throw new PlatformUnavailable(`Discord failed (HTTP ${error.status})`);
      throw new PlatformRefusal(`Discord refused: ${error.message}`, error.status);
    }
    if (error instanceof HTTPError) throw new PlatformUnavailable(`Discord failed (HTTP ${error.status})`);
    if (error instanceof RateLimitError) throw new PlatformUnavailable(`Discord rate limit: retry in ${Math.ceil(error.retryAfter / 1000)} s`);
    throw new PlatformUnavailable(`Discord could not be reached (${errorName(error)})`);
  }
}

export function errorName(error: unknown): string {
  if (error instanceof Error) return (error as Error & { code?: string }).code ?? error.name;
  return "unknown error";
}
