import { Writable } from "node:stream";
import pino from "pino";
import { startFakeDiscord, type FakeDiscord } from "../fakes/platforms/discord-server.ts";
import { startFakeSlack, type FakeSlack } from "../fakes/platforms/slack-server.ts";
import { startFakeTelegram, type FakeTelegram } from "../fakes/platforms/telegram-server.ts";
import { startTestService, type TestService, type TestServiceOptions } from "../support/service.ts";

export interface Platforms {
  discord: FakeDiscord;
  telegram: FakeTelegram;
  slack: FakeSlack;
  close: () => Promise<void>;
}

export async function startPlatforms(): Promise<Platforms> {
  const [discord, telegram, slack] = await Promise.all([startFakeDiscord(), startFakeTelegram(), startFakeSlack()]);
  return { discord, telegram, slack, close: async () => void (await Promise.all([discord.close(), telegram.close(), slack.close()])) };
}

/** The settings that point the service at the fakes. */
export function platformEnv(platforms: Pick<Platforms, "discord" | "telegram" | "slack">): Record<string, string> {
  return {
    DISCORD_API_URL: platforms.discord.apiUrl,
    TELEGRAM_API_URL: platforms.telegram.url,
    SLACK_API_URL: platforms.slack.url,
    PLATFORM_TIMEOUT_MS: "3000",
    // The tests' server is plain HTTP on loopback; the fake platform calls it back all the same.
    TELEGRAM_UPDATES: "webhook",
  };
}

/** A logger whose every line (JSON) is kept, to check what reaches the logs. */
export function capturedLog(): { log: pino.Logger; text: () => string } {
  let text = "";
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  return { log: pino({ level: "debug" }, stream), text: () => text };
}

export async function startWithPlatforms(platforms: Platforms, options: TestServiceOptions = {}): Promise<TestService> {
  return startTestService({ ...options, env: { ...platformEnv(platforms), ...options.env } });
}
