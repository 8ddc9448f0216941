import { DiscordClient } from "./discord.ts";
import { SlackClient } from "./slack.ts";
import { TelegramClient } from "./telegram.ts";
import type { PlatformClient, PlatformName, PlatformSettings } from "./types.ts";

/**
 * The client of a bot on its platform. `retries: 0` for calls made while a request waits (the token
 * check at connection): a platform that is down answers a 502 at once rather than after backoff.
 */
export function platformClient(settings: PlatformSettings, platform: PlatformName, token: string, options: { retries?: number } = {}): PlatformClient {
  switch (platform) {
    case "forum":
      return new DiscordClient(settings, token, options);
    case "messenger":
      return new TelegramClient(settings, token, options);
    case "workspace":
      return new SlackClient(settings, token, options);
  }
}
