import { startFakeDiscord } from "../../test/fakes/platforms/discord-server.ts";
import { startFakeSlack } from "../../test/fakes/platforms/slack-server.ts";
import { startFakeTelegram } from "../../test/fakes/platforms/telegram-server.ts";
import { PLATFORM_BOTS } from "../support/platform-bots.ts";

/**
 * Loopback fakes of the three chat platforms for the real server, knowing the suite's bots, so
 * that connecting, testing and the callbacks run their real flow. Answers the server's settings.
 */
export async function startPlatformFakes(): Promise<{ env: Record<string, string>; stop: () => Promise<void> }> {
  const [discord, telegram, slack] = await Promise.all([startFakeDiscord(), startFakeTelegram(), startFakeSlack()]);
  discord.addBot({ token: PLATFORM_BOTS.forum.token, guilds: [PLATFORM_BOTS.forum.guildId] });
  telegram.addBot({ token: PLATFORM_BOTS.messenger.token });
  slack.addBot({ token: PLATFORM_BOTS.workspace.token, teamId: PLATFORM_BOTS.workspace.workspaceId });
  return {
    env: { DISCORD_API_URL: discord.apiUrl, TELEGRAM_API_URL: telegram.url, SLACK_API_URL: slack.url },
    stop: async () => void (await Promise.all([discord.close(), telegram.close(), slack.close()])),
  };
}
