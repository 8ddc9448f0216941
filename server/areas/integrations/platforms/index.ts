import type { PlatformClient, PlatformName, PlatformSettings } from "./types.ts";

/**
 * The client of a bot on its platform. `retries: 0` for calls made while a request waits (the token
 * check at connection): a platform that is down answers a 502 at once rather than after backoff.
 * Each platform's client library loads with its first use, not with every start.
 */
export async function platformClient(settings: PlatformSettings, platform: PlatformName, token: string, options: { retries?: number } = {}): Promise<PlatformClient> {
  switch (platform) {
    case "forum":
      return new (await import("./discord.ts")).DiscordClient(settings, token, options);
    case "messenger":
      return new (await import("./telegram.ts")).TelegramClient(settings, token, options);
    case "workspace":
      return new (await import("./slack.ts")).SlackClient(settings, token, options);
  }
}
