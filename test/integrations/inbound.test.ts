import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectOk } from "../support/assertions.ts";
import { createPersona } from "../support/chat.ts";
import { eventually } from "../support/wait.ts";
import type { TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { setAccountSuspension } from "../../server/areas/auth/index.ts";
import { slackMessageEvent } from "../fakes/platforms/slack-server.ts";
import { telegramTextUpdate } from "../fakes/platforms/telegram-server.ts";
import { capturedLog, startPlatforms, startWithPlatforms, type Platforms } from "./helpers.ts";

// Webhook-style inbound: the messenger's updates and the workspace's signed Events API callbacks
// become persona replies (a job, the reply engine, the channel's conversation), posted back
// through the fakes; forged callbacks are refused and nothing is processed.

const SIGNING_SECRET = "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6";
let platforms: Platforms;
let service: TestService;
let owner: TestUser;
const logs = capturedLog();
/** Every bot token and secret the tests use, to look for in the log at the end. */
const secrets: string[] = [SIGNING_SECRET];

beforeAll(async () => {
  platforms = await startPlatforms();
  service = await startWithPlatforms(platforms, { log: logs.log, env: { DEFAULT_PLAN: "creator", LOG_LEVEL: "debug" } });
  owner = await registerUser(service);
}, 120_000);
afterAll(async () => {
  await service?.close();
  await platforms?.close();
});

const knex = () => service.services.db.knex;
const client = () => service.clientFor(owner);

async function connectMessenger(user = owner) {
  const persona = await createPersona(service, user);
  const bot = platforms.telegram.addBot();
  const integration = await expectOk(service.clientFor(user).POST("/v1/integrations/messenger", { body: { persona_id: persona.id, bot_token: bot.token } }), 201);
  secrets.push(bot.token, platforms.telegram.webhookOf(bot.token)!.secret);
  return { persona, bot, integration };
}

async function connectWorkspace(channels = ["C05B8RY3N1"]) {
  const persona = await createPersona(service, owner);
  const bot = platforms.slack.addBot();
  const integration = await expectOk(
    client().POST("/v1/integrations/workspace", { body: { persona_id: persona.id, bot_token: bot.token, workspace_id: bot.teamId, channel_ids: channels, signing_secret: SIGNING_SECRET } }),
    201,
  );
  secrets.push(bot.token);
  return { persona, bot, integration, eventsUrl: integration.events_url! };
}

const sentTo = (token: string) => platforms.telegram.calls("sendMessage").filter((r) => r.path.includes(token));
const postedBy = (token: string) => platforms.slack.calls("chat.postMessage").filter((r) => r.headers.authorization === `Bearer ${token}`);
const detail = async (id: string, user = owner) => expectOk(service.clientFor(user).GET("/v1/integrations/{id}", { params: { path: { id } } }));

describe("messenger updates", { timeout: 90_000 }, () => {
  it("answers a private message through the reply engine in the chat's conversation, and counts it", async () => {
    const { bot, integration, persona } = await connectMessenger();
    expect(await platforms.telegram.deliver(bot.token, telegramTextUpdate({ chatId: 4242, text: "Hello captain, how are the stars?" }))).toBe(200);
    const [sent] = await eventually(async () => (sentTo(bot.token).length ? sentTo(bot.token) : undefined));
    expect(sent!.body.chat_id).toBe("4242");
    expect(String(sent!.body.text).length).toBeGreaterThan(0);
    const after = await eventually(async () => {
      const read = await detail(integration.id);
      return read.message_count === 1 ? read : undefined;
    });
    expect(after.last_message_at).not.toBeNull();
    expect(after).not.toHaveProperty("last_error");
    // The chat is a conversation of the persona's owner, holding the exchange.
    const [mapping] = await knex()("integration_channels").where({ integration_id: integration.id });
    const conversation = await expectOk(client().GET("/v1/conversations/{id}", { params: { path: { id: mapping.conversation_id } } }));
    expect(conversation.persona_id).toBe(persona.id);
    // It opens with the persona's greeting, stored (not posted to the chat).
    expect(conversation.messages.map((m) => [m.role, m.content])).toEqual([
      ["assistant", "Welcome aboard!"],
      ["user", "Hello captain, how are the stars?"],
      ["assistant", sent!.body.text],
    ]);

    // The same chat keeps its conversation; a retried update (same update_id) is answered once.
    const second = telegramTextUpdate({ chatId: 4242, text: "And the moon?" });
    expect(await platforms.telegram.deliver(bot.token, second)).toBe(200);
    expect(await platforms.telegram.deliver(bot.token, second)).toBe(200);
    await eventually(async () => (await detail(integration.id)).message_count === 2);
    expect(await knex()("integration_channels").where({ integration_id: integration.id })).toHaveLength(1);
    // Two exchanges after the greeting (depth 0).
    const messages = await knex()("messages").where({ conversation_id: mapping.conversation_id }).where("depth", ">", 0);
    expect(messages).toHaveLength(4);
    expect(sentTo(bot.token)).toHaveLength(2);
  });

  it("refuses a wrong or missing secret token with 401 and processes nothing", async () => {
    const { bot, integration } = await connectMessenger();
    expect(await platforms.telegram.deliver(bot.token, telegramTextUpdate({ chatId: 1, text: "forged" }), { secret: "wrong-secret" })).toBe(401);
    expect(await platforms.telegram.deliver(bot.token, telegramTextUpdate({ chatId: 1, text: "forged" }), { secret: null })).toBe(401);
    expect(await knex()("integration_events").where({ integration_id: integration.id })).toHaveLength(0);
    const { error, response } = await service.api.POST("/v1/integrations/{id}/messenger/updates", { params: { path: { id: integration.id } }, body: { update_id: 1 } });
    expect(response.status).toBe(401);
    expect(error!.error.code).toBe("unauthorized");
    const unknown = await service.api.POST("/v1/integrations/{id}/messenger/updates", {
      params: { path: { id: "0193a6c4-0000-7000-8000-000000000000" }, header: { "X-Telegram-Bot-Api-Secret-Token": "x" } },
      body: { update_id: 1 },
    });
    expect(unknown.response.status).toBe(404);
  });

  it("in a group answers only mentions and replies to the bot unless auto_respond; never itself or other bots; nothing while inactive", async () => {
    const { bot, integration } = await connectMessenger();
    const group = { chatId: -1001, chatType: "supergroup" as const };
    const deliver = (update: Record<string, unknown>) => platforms.telegram.deliver(bot.token, update);
    await deliver(telegramTextUpdate({ ...group, text: "just chatting" }));
    await deliver(telegramTextUpdate({ ...group, text: "I am a bot", isBot: true, fromId: 999, entities: [{ type: "mention", offset: 0, length: 1 }] }));
    await deliver(telegramTextUpdate({ ...group, text: "talking to myself", fromId: bot.id }));
    const mention = `@${bot.username} what is your ship called?`;
    await deliver(telegramTextUpdate({ ...group, text: mention, entities: [{ type: "mention", offset: 0, length: bot.username.length + 1 }] }));
    await eventually(async () => sentTo(bot.token).length === 1);
    expect(sentTo(bot.token)[0]!.body.reply_parameters).toMatchObject({ allow_sending_without_reply: true });
    await deliver(telegramTextUpdate({ ...group, text: "replying to you", replyToFrom: bot.id }));
    await eventually(async () => sentTo(bot.token).length === 2);

    await expectOk(client().PUT("/v1/integrations/{id}", { params: { path: { id: integration.id } }, body: { auto_respond: true } }));
    await deliver(telegramTextUpdate({ ...group, text: "now everyone gets an answer" }));
    await eventually(async () => sentTo(bot.token).length === 3);

    await expectOk(client().PUT("/v1/integrations/{id}", { params: { path: { id: integration.id } }, body: { active: false } }));
    expect(await deliver(telegramTextUpdate({ ...group, text: "paused?" }))).toBe(200);
    await expectOk(client().PUT("/v1/integrations/{id}", { params: { path: { id: integration.id } }, body: { active: true } }));
    await deliver(telegramTextUpdate({ chatId: 77, text: "back?" }));
    await eventually(async () => sentTo(bot.token).length === 4);
    expect(sentTo(bot.token).map((r) => r.body.chat_id)).toEqual(["-1001", "-1001", "-1001", "77"]);
    // The user messages stored are the answered ones only, each with its author's name in a group.
    const userMessages = (await knex()("messages").whereIn("conversation_id", knex()("integration_channels").where({ integration_id: integration.id }).select("conversation_id")).where({ role: "user" }).orderBy("created_at")).map((m: { content: string }) => m.content);
    expect(userMessages).toEqual(["Ada: what is your ship called?", "Ada: replying to you", "Ada: now everyone gets an answer", "back?"]);
  });

  it("posts nothing when the owner's message quota is used up, and says why in the integration", async () => {
    const user = await registerUser(service);
    await knex()("users").where({ id: user.id }).update({ plan: "free" });
    const { bot, integration } = await connectMessenger(user);
    const period = new Date().toISOString().slice(0, 8) + "01";
    await knex()("usage_counters").insert({ user_id: user.id, period_start: period, messages_sent: 200 });
    await platforms.telegram.deliver(bot.token, telegramTextUpdate({ chatId: 9, text: "anyone there?" }));
    const read = await eventually(async () => {
      const found = await expectOk(service.clientFor(user).GET("/v1/integrations/{id}", { params: { path: { id: integration.id } } }));
      return found.last_error ? found : undefined;
    });
    expect(read.last_error).toMatchObject({ code: "plan_limit_exceeded", message: expect.stringContaining("200") });
    expect(read.message_count).toBe(0);
    expect(sentTo(bot.token)).toHaveLength(0);
  });

  it("answers no one while its owner is suspended, says why, and answers again once the suspension is lifted", async () => {
    const user = await registerUser(service);
    const { bot, integration } = await connectMessenger(user);
    await setAccountSuspension(service.services, user.id, new Date(), "spam");
    await platforms.telegram.deliver(bot.token, telegramTextUpdate({ chatId: 11, text: "hello?" }));
    // Read as the operator would: the owner cannot sign in while suspended.
    const unanswered = await eventually(async () => {
      const found = await knex()("integrations").where({ id: integration.id }).first();
      return found.last_error ? found : undefined;
    });
    expect(unanswered.last_error).toMatchObject({ code: "account_suspended" });
    expect(unanswered.message_count).toBe(0);
    expect(sentTo(bot.token)).toHaveLength(0);

    await setAccountSuspension(service.services, user.id, null, null);
    await platforms.telegram.deliver(bot.token, telegramTextUpdate({ chatId: 11, text: "hello again?" }));
    await eventually(async () => sentTo(bot.token).length === 1);
    expect(await detail(integration.id, user)).toMatchObject({ message_count: 1 });
  });

  it("honours a 429's retry_after from the platform when posting the reply", async () => {
    const { bot, integration } = await connectMessenger();
    platforms.telegram.inject({ match: `${bot.token}/sendMessage`, status: 429, body: { ok: false, error_code: 429, description: "Too Many Requests: retry after 1", parameters: { retry_after: 1 } } });
    await platforms.telegram.deliver(bot.token, telegramTextUpdate({ chatId: 5, text: "busy?" }));
    await eventually(async () => sentTo(bot.token).length === 2);
    expect(sentTo(bot.token).every((r) => r.body.chat_id === "5")).toBe(true);
    await eventually(async () => (await detail(integration.id)).message_count === 1);
  });
});

describe("workspace events", { timeout: 90_000 }, () => {
  it("answers url_verification with its challenge once the signature checks", async () => {
    const { eventsUrl } = await connectWorkspace();
    const answer = await platforms.slack.event(eventsUrl, { type: "url_verification", token: "t", challenge: "3eZbrw1aBm2rZgRNFdxV" }, SIGNING_SECRET);
    expect(answer).toEqual({ status: 200, json: { received: true, challenge: "3eZbrw1aBm2rZgRNFdxV" } });
  });

  it("refuses a forged signature, another secret and a stale timestamp with 401, and processes nothing", async () => {
    const { eventsUrl, integration } = await connectWorkspace();
    const event = slackMessageEvent({ channel: "C05B8RY3N1", text: "hi", channelType: "im" });
    expect((await platforms.slack.event(eventsUrl, event, SIGNING_SECRET, { forge: true })).status).toBe(401);
    expect((await platforms.slack.event(eventsUrl, event, "another-secret")).status).toBe(401);
    expect((await platforms.slack.event(eventsUrl, event, SIGNING_SECRET, { timestamp: Math.floor(Date.now() / 1000) - 301 })).status).toBe(401);
    expect((await platforms.slack.event(eventsUrl, { type: "url_verification", challenge: "c" }, SIGNING_SECRET, { forge: true })).status).toBe(401);
    expect(await knex()("integration_events").where({ integration_id: integration.id })).toHaveLength(0);
  });

  it("answers mentions and direct messages in configured channels, once per message; ignores other channels, edits and bots", async () => {
    const { eventsUrl, bot, integration } = await connectWorkspace();
    const send = (event: Record<string, unknown>) => platforms.slack.event(eventsUrl, event, SIGNING_SECRET);
    expect((await send(slackMessageEvent({ channel: "C05B8RY3N1", text: "no mention here" }))).status).toBe(200);
    await send(slackMessageEvent({ channel: "C0OTHER", text: `<@${bot.userId}> not my channel` }));
    await send(slackMessageEvent({ channel: "C05B8RY3N1", text: `<@${bot.userId}> edited`, subtype: "message_changed" }));
    await send(slackMessageEvent({ channel: "C05B8RY3N1", text: `<@${bot.userId}> from a bot`, botId: "B0OTHER" }));
    await send(slackMessageEvent({ channel: "C05B8RY3N1", text: `<@${bot.userId}> from another workspace`, teamId: "T0ELSE" }));
    // The same message as `message` and `app_mention` (two event ids), and a retry: one reply.
    const ts = "1795000000.000100";
    const mention = slackMessageEvent({ channel: "C05B8RY3N1", text: `<@${bot.userId}> which star is nearest?`, ts });
    const twin = slackMessageEvent({ channel: "C05B8RY3N1", text: `<@${bot.userId}> which star is nearest?`, ts, type: "app_mention" });
    await send(mention);
    await send(mention);
    await send(twin);
    await eventually(async () => postedBy(bot.token).length === 1);
    await send(slackMessageEvent({ channel: "D0DIRECT", text: "a direct message", channelType: "im" }));
    await eventually(async () => postedBy(bot.token).length === 2);
    expect(postedBy(bot.token).map((r) => r.body.channel)).toEqual(["C05B8RY3N1", "D0DIRECT"]);
    expect((await detail(integration.id)).message_count).toBe(2);
  });

  it("answers every message of a configured channel with auto_respond, and waits out a 429's Retry-After", async () => {
    const { eventsUrl, bot, integration } = await connectWorkspace();
    await expectOk(client().PUT("/v1/integrations/{id}", { params: { path: { id: integration.id } }, body: { auto_respond: true } }));
    platforms.slack.inject({ match: "/chat.postMessage", status: 429, body: { ok: false, error: "ratelimited" }, headers: { "retry-after": "1" } });
    await platforms.slack.event(eventsUrl, slackMessageEvent({ channel: "C05B8RY3N1", text: "plain message" }), SIGNING_SECRET);
    // The first attempt is answered 429; the library waits Retry-After and sends it again.
    await eventually(async () => postedBy(bot.token).length === 2);
    await eventually(async () => (await detail(integration.id)).message_count === 1);
    expect(postedBy(bot.token)[0]!.body).toEqual(postedBy(bot.token)[1]!.body);
  });
});

describe("logs", () => {
  it("never carry a bot token, a webhook secret token or a signing secret", () => {
    expect(logs.text().length).toBeGreaterThan(0);
    for (const secret of secrets) expect(logs.text()).not.toContain(secret);
  });
});
