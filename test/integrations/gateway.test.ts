import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectOk } from "../support/assertions.ts";
import { createPersona } from "../support/chat.ts";
import { eventually } from "../support/wait.ts";
import type { TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { discordMessage, startFakeDiscord, type FakeDiscord, type FakeDiscordBot } from "../fakes/platforms/discord-server.ts";
import { platformEnv, startPlatforms, startWithPlatforms, type Platforms } from "./helpers.ts";

// The forum bot's gateway connection, held by the worker under a lease: identify, messages in and
// replies out, drops resumed without losing what was sent meanwhile, 429s waited out, and the
// connection closed when the integration is paused or deleted.

const GUILD = "884213597310459904";
const CHANNEL = "884213597310459907";
let platforms: Platforms;
let discord: FakeDiscord;
let service: TestService;
let owner: TestUser;

beforeAll(async () => {
  platforms = await startPlatforms();
  discord = await startFakeDiscord({ heartbeatIntervalMs: 500 });
  service = await startWithPlatforms(platforms, { env: { ...platformEnv({ ...platforms, discord }), DEFAULT_PLAN: "creator", INTEGRATIONS_LEASE_MS: "900" } });
  owner = await registerUser(service);
}, 120_000);
afterAll(async () => {
  await service?.close();
  await discord?.close();
  await platforms?.close();
});

async function connectForum(): Promise<{ bot: FakeDiscordBot; id: string }> {
  const persona = await createPersona(service, owner);
  const bot = discord.addBot();
  const created = await expectOk(service.clientFor(owner).POST("/v1/integrations/forum", { body: { persona_id: persona.id, bot_token: bot.token, guild_id: GUILD, channel_ids: [CHANNEL] } }), 201);
  await eventually(async () => discord.liveSessions(bot.token) === 1);
  return { bot, id: created.id };
}

const postsOf = (bot: FakeDiscordBot) => discord.posts().filter((r) => r.headers.authorization === `Bot ${bot.token}`);

describe("forum gateway", { timeout: 90_000 }, () => {
  it("identifies with the message intents, answers mentions in its channels and direct messages, and ignores the rest", async () => {
    const { bot, id } = await connectForum();
    const identify = discord.received.find((frame) => frame.op === 2 && (frame.d as { token: string }).token === bot.token)!;
    expect((identify.d as { intents: number }).intents).toBe(1 | 512 | 4096 | 32768);
    discord.message(bot.token, discordMessage({ channelId: CHANNEL, content: "chatter without a mention" }));
    discord.message(bot.token, discordMessage({ channelId: "999", content: `<@${bot.id}> wrong channel`, mentions: [bot.id] }));
    discord.message(bot.token, discordMessage({ channelId: CHANNEL, content: `<@${bot.id}> me again`, mentions: [bot.id], authorId: bot.id, bot: true }));
    discord.message(bot.token, discordMessage({ channelId: CHANNEL, content: "another bot", mentions: [bot.id], authorId: "42", bot: true }));
    discord.message(bot.token, discordMessage({ channelId: CHANNEL, content: `<@${bot.id}> where are we headed?`, mentions: [bot.id], guildId: "1" }));
    const mention = discordMessage({ channelId: CHANNEL, content: `<@${bot.id}> where are we headed?`, mentions: [bot.id] });
    discord.message(bot.token, mention);
    const [reply] = await eventually(async () => (postsOf(bot).length ? postsOf(bot) : undefined));
    expect(reply!.path).toBe(`/api/v10/channels/${CHANNEL}/messages`);
    expect(reply!.body).toMatchObject({ message_reference: { message_id: mention.id }, allowed_mentions: { parse: [] } });
    discord.message(bot.token, discordMessage({ channelId: "777", content: "a direct message", guildId: null }));
    await eventually(async () => postsOf(bot).length === 2);
    expect(postsOf(bot)[1]!.path).toBe("/api/v10/channels/777/messages");
    expect(postsOf(bot)[1]!.body).not.toHaveProperty("message_reference");
    const read = await expectOk(service.clientFor(owner).GET("/v1/integrations/{id}", { params: { path: { id } } }));
    expect(read.message_count).toBe(2);
    const stored = await service.services.db.knex("messages").whereIn("conversation_id", service.services.db.knex("integration_channels").where({ integration_id: id }).select("conversation_id")).where({ role: "user" });
    expect(stored.map((m: { content: string }) => m.content).sort()).toEqual(["Ada: where are we headed?", "a direct message"]);
  });

  it("resumes after the gateway drops, and answers a message sent while it was away", async () => {
    const { bot } = await connectForum();
    await eventually(async () => discord.received.some((frame) => frame.op === 1));
    discord.drop(bot.token, 4000);
    discord.message(bot.token, discordMessage({ channelId: CHANNEL, content: `<@${bot.id}> are you still there?`, mentions: [bot.id] }));
    await eventually(async () => discord.received.some((frame) => frame.op === 6 && (frame.d as { token: string }).token === bot.token));
    await eventually(async () => postsOf(bot).length === 1);
    expect(discord.liveSessions(bot.token)).toBe(1);
    // Resumed, not identified again.
    expect(discord.received.filter((frame) => frame.op === 2 && (frame.d as { token: string }).token === bot.token)).toHaveLength(1);
  });

  it("waits out a 429 with retry_after when posting the reply", async () => {
    const { bot, id } = await connectForum();
    discord.inject({ match: `/channels/${CHANNEL}/messages`, status: 429, body: { message: "You are being rate limited.", retry_after: 0.3, global: false }, headers: { "retry-after": "1", "x-ratelimit-scope": "user" } });
    discord.message(bot.token, discordMessage({ channelId: CHANNEL, content: `<@${bot.id}> quick!`, mentions: [bot.id] }));
    // The first attempt is answered 429; the library waits retry_after and sends it again.
    await eventually(async () => postsOf(bot).length === 2);
    const read = await eventually(async () => {
      const found = await expectOk(service.clientFor(owner).GET("/v1/integrations/{id}", { params: { path: { id } } }));
      return found.message_count === 1 ? found : undefined;
    });
    expect(read).not.toHaveProperty("last_error");
    expect(postsOf(bot)[0]!.body).toEqual(postsOf(bot)[1]!.body);
  });

  it("closes the connection when paused and when deleted, and reconnects when resumed", async () => {
    const { bot, id } = await connectForum();
    const path = { params: { path: { id } } };
    await expectOk(service.clientFor(owner).PUT("/v1/integrations/{id}", { ...path, body: { active: false } }));
    await eventually(async () => discord.liveSessions(bot.token) === 0);
    expect(await service.services.db.knex("integration_leases").where({ integration_id: id })).toHaveLength(0);
    await expectOk(service.clientFor(owner).PUT("/v1/integrations/{id}", { ...path, body: { active: true } }));
    await eventually(async () => discord.liveSessions(bot.token) === 1);
    await expectOk(service.clientFor(owner).DELETE("/v1/integrations/{id}", path));
    await eventually(async () => discord.liveSessions(bot.token) === 0);
  });

  it("gives up a connection the gateway refuses (4004), says why, and tries again after a backoff", async () => {
    const { bot, id } = await connectForum();
    discord.drop(bot.token, 4004);
    const read = await eventually(async () => {
      const found = await expectOk(service.clientFor(owner).GET("/v1/integrations/{id}", { params: { path: { id } } }));
      return found.last_error ? found : undefined;
    });
    expect(read.last_error).toMatchObject({ code: "platform_error", message: expect.stringContaining("4004") });
    // The fake takes the token again: the next attempt connects.
    await eventually(async () => discord.liveSessions(bot.token) === 1, 30_000);
    expect(discord.received.filter((frame) => frame.op === 2 && (frame.d as { token: string }).token === bot.token)).toHaveLength(2);
  });
});
