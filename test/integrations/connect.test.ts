import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectApiError, expectOk } from "../support/assertions.ts";
import { createPersona } from "../support/chat.ts";
import type { TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { capturedLog, startPlatforms, startWithPlatforms, type Platforms } from "./helpers.ts";

// Connecting, reading, changing and disconnecting bots on the three platforms, against fakes of
// their APIs: token checks, encryption at rest, limits, bad input and other users.

const GUILD = "884213597310459904";
const SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5";
let platforms: Platforms;
let service: TestService;
let owner: TestUser;
let other: TestUser;
const logs = capturedLog();

beforeAll(async () => {
  platforms = await startPlatforms();
  service = await startWithPlatforms(platforms, { log: logs.log, env: { DEFAULT_PLAN: "creator" } });
  [owner, other] = await Promise.all([registerUser(service), registerUser(service)]);
}, 120_000);
afterAll(async () => {
  await service?.close();
  await platforms?.close();
});

const client = (user: TestUser) => service.clientFor(user);

describe("connect", { timeout: 90_000 }, () => {
  it("connects a forum bot after the platform accepts its token and guild; the token is stored encrypted and never returned or logged", async () => {
    const persona = await createPersona(service, owner);
    const bot = platforms.discord.addBot();
    const body = await expectOk(
      client(owner).POST("/v1/integrations/forum", { body: { persona_id: persona.id, bot_token: bot.token, guild_id: GUILD, channel_ids: ["884213597310459907", "884213597310459907", "884213597310459911"] } }),
      201,
    );
    expect(body).toMatchObject({ platform: "forum", persona_id: persona.id, status: "active", guild_id: GUILD, channel_ids: ["884213597310459907", "884213597310459911"], message_count: 0, auto_respond: false, last_message_at: null });
    expect(JSON.stringify(body)).not.toContain(bot.token);
    const checked = platforms.discord.requests.filter((r) => r.headers.authorization === `Bot ${bot.token}`).map((r) => `${r.method} ${r.path}`);
    expect(checked).toEqual(["GET /api/v10/users/@me", `GET /api/v10/guilds/${GUILD}`]);
    const row = await service.services.db.knex("integrations").where({ id: body.id }).first();
    expect(row.token_encrypted).toMatch(/^v1\./);
    expect(row.token_encrypted).not.toContain(bot.token);
    expect(row.bot_user_id).toBe(bot.id);

    const listed = await expectOk(client(owner).GET("/v1/integrations"));
    expect(listed.total).toBe(1);
    expect(JSON.stringify(listed)).not.toContain(bot.token);
    const read = await expectOk(client(owner).GET("/v1/integrations/{id}", { params: { path: { id: body.id } } }));
    expect(JSON.stringify(read)).not.toContain(bot.token);
    expect(logs.text()).not.toContain(bot.token);
  });

  it("connects a messenger bot and registers its webhook with a secret token; list is newest first", async () => {
    const persona = await createPersona(service, owner);
    const bot = platforms.telegram.addBot();
    const body = await expectOk(client(owner).POST("/v1/integrations/messenger", { body: { persona_id: persona.id, bot_token: bot.token } }), 201);
    expect(body).toMatchObject({ platform: "messenger", status: "active", message_count: 0 });
    expect(body).not.toHaveProperty("channel_ids");
    expect(body).not.toHaveProperty("events_url");
    const hook = platforms.telegram.webhookOf(bot.token)!;
    expect(hook.url).toBe(`${service.url}/v1/integrations/${body.id}/messenger/updates`);
    expect(hook.secret).toMatch(/^[\w-]{40,}$/);
    const row = await service.services.db.knex("integrations").where({ id: body.id }).first();
    expect(row.secret_encrypted).not.toContain(hook.secret);
    const listed = await expectOk(client(owner).GET("/v1/integrations"));
    expect(listed.data[0]!.id).toBe(body.id);
    expect(logs.text()).not.toContain(bot.token);
  });

  it("connects a workspace bot with its signing secret and answers the events URL to give the platform", async () => {
    const persona = await createPersona(service, owner);
    const bot = platforms.slack.addBot();
    const body = await expectOk(
      client(owner).POST("/v1/integrations/workspace", { body: { persona_id: persona.id, bot_token: bot.token, workspace_id: bot.teamId, channel_ids: ["C05B8RY3N1"], signing_secret: SIGNING_SECRET } }),
      201,
    );
    expect(body).toMatchObject({ platform: "workspace", workspace_id: bot.teamId, channel_ids: ["C05B8RY3N1"], events_url: `${service.url}/v1/integrations/${body.id}/workspace/events` });
    expect(JSON.stringify(body)).not.toContain(SIGNING_SECRET);
    expect(platforms.slack.calls("auth.test").at(-1)!.headers.authorization).toBe(`Bearer ${bot.token}`);
  });

  it("refuses a token the platform rejects with 400 on each platform, and writes nothing", async () => {
    const persona = await createPersona(service, owner);
    const before = await service.services.db.knex("integrations").count({ n: "*" });
    const forum = await expectApiError(client(owner).POST("/v1/integrations/forum", { body: { persona_id: persona.id, bot_token: "not-a-valid-token", guild_id: GUILD, channel_ids: ["1"] } }), 400, "invalid_request");
    expect(forum.error.details?.errors?.[0]?.path).toBe("/body/bot_token");
    await expectApiError(client(owner).POST("/v1/integrations/messenger", { body: { persona_id: persona.id, bot_token: "123:bad" } }), 400, "invalid_request");
    const workspace = await expectApiError(
      client(owner).POST("/v1/integrations/workspace", { body: { persona_id: persona.id, bot_token: "xoxb-bad", workspace_id: "T1", channel_ids: ["C1"], signing_secret: "s" } }),
      400,
      "invalid_request",
    );
    expect(workspace.error.message).toContain("invalid_auth");
    expect(await service.services.db.knex("integrations").count({ n: "*" })).toEqual(before);
    expect(logs.text()).not.toContain("not-a-valid-token");
  });

  it("refuses a guild the bot is not in, and a token of another workspace (400)", async () => {
    const persona = await createPersona(service, owner);
    const discordBot = platforms.discord.addBot({ guilds: [] });
    const guild = await expectApiError(client(owner).POST("/v1/integrations/forum", { body: { persona_id: persona.id, bot_token: discordBot.token, guild_id: GUILD, channel_ids: ["1"] } }), 400, "invalid_request");
    expect(guild.error.details?.errors?.[0]?.path).toBe("/body/guild_id");
    const slackBot = platforms.slack.addBot({ teamId: "T0OTHER" });
    const team = await expectApiError(
      client(owner).POST("/v1/integrations/workspace", { body: { persona_id: persona.id, bot_token: slackBot.token, workspace_id: "T04A7QX2M9", channel_ids: ["C1"], signing_secret: "s" } }),
      400,
      "invalid_request",
    );
    expect(team.error.details?.errors?.[0]?.path).toBe("/body/workspace_id");
  });

  it("needs a signing secret for a workspace app when the server has none", async () => {
    const persona = await createPersona(service, owner);
    const bot = platforms.slack.addBot();
    const answer = await expectApiError(client(owner).POST("/v1/integrations/workspace", { body: { persona_id: persona.id, bot_token: bot.token, workspace_id: bot.teamId, channel_ids: ["C1"] } }), 400, "invalid_request");
    expect(answer.error.details?.errors?.[0]?.path).toBe("/body/signing_secret");
  });

  it("answers 502 when the platform fails or cannot be reached, and writes nothing", async () => {
    const persona = await createPersona(service, owner);
    const bot = platforms.discord.addBot();
    platforms.discord.inject({ match: "/users/@me", status: 503, body: { message: "upstream connect error", code: 0 } });
    await expectApiError(client(owner).POST("/v1/integrations/forum", { body: { persona_id: persona.id, bot_token: bot.token, guild_id: GUILD, channel_ids: ["1"] } }), 502, "upstream_error");
    // Injected for this bot's calls only: a background job of an earlier test's bot may call getMe too.
    const failing = platforms.telegram.addBot().token;
    platforms.telegram.inject({ match: `${failing}/getMe`, status: 500, body: { ok: false, error_code: 500, description: "Internal Server Error" } });
    await expectApiError(client(owner).POST("/v1/integrations/messenger", { body: { persona_id: persona.id, bot_token: failing } }), 502, "upstream_error");
    const down = await startWithPlatforms(platforms, { env: { SLACK_API_URL: "http://127.0.0.1:9/api/", DISCORD_API_URL: "http://127.0.0.1:9/api", SLACK_SIGNING_SECRET: "x" } });
    try {
      const user = await registerUser(down);
      const mine = await createPersona(down, user);
      await expectApiError(down.clientFor(user).POST("/v1/integrations/workspace", { body: { persona_id: mine.id, bot_token: "xoxb-1", workspace_id: "T1", channel_ids: ["C1"] } }), 502, "upstream_error");
      await expectApiError(down.clientFor(user).POST("/v1/integrations/forum", { body: { persona_id: mine.id, bot_token: "x", guild_id: GUILD, channel_ids: ["1"] } }), 502, "upstream_error");
      expect(await down.services.db.knex("integrations").count({ n: "*" })).toEqual([{ n: 0 }]);
    } finally {
      await down.close();
    }
    expect(await service.services.db.knex("integrations").where({ persona_id: persona.id }).count({ n: "*" })).toEqual([{ n: 0 }]);
  });

  it("answers 502 when the platform says 200 without the bot's account, and writes nothing", async () => {
    const persona = await createPersona(service, owner);
    const bot = platforms.discord.addBot();
    platforms.discord.inject({ match: "/users/@me", status: 200, body: { hello: "world" } });
    await expectApiError(client(owner).POST("/v1/integrations/forum", { body: { persona_id: persona.id, bot_token: bot.token, guild_id: GUILD, channel_ids: ["1"] } }), 502, "upstream_error");
    const nameless = platforms.telegram.addBot().token;
    platforms.telegram.inject({ match: `${nameless}/getMe`, status: 200, body: { ok: true, result: { first_name: "no id" } } });
    const refused = await expectApiError(client(owner).POST("/v1/integrations/messenger", { body: { persona_id: persona.id, bot_token: nameless } }), 502, "upstream_error");
    expect(refused.error.message).toBe("Telegram answered getMe without a bot id");
    expect(await service.services.db.knex("integrations").where({ persona_id: persona.id }).count({ n: "*" })).toEqual([{ n: 0 }]);
  });

  it("allows one integration per persona and platform, and one integration per bot (409)", async () => {
    const [first, second] = [await createPersona(service, owner), await createPersona(service, owner)];
    const bot = platforms.telegram.addBot();
    await expectOk(client(owner).POST("/v1/integrations/messenger", { body: { persona_id: first.id, bot_token: bot.token } }), 201);
    await expectApiError(client(owner).POST("/v1/integrations/messenger", { body: { persona_id: first.id, bot_token: platforms.telegram.addBot().token } }), 409, "conflict");
    const again = await expectApiError(client(owner).POST("/v1/integrations/messenger", { body: { persona_id: second.id, bot_token: bot.token } }), 409, "conflict");
    expect(again.error.message).toContain("bot");
  });

  it("refuses another user's persona (404), bad bodies (400) and credentials without the admin scope (403)", async () => {
    const theirs = await createPersona(service, other, { is_public: true });
    const bot = platforms.telegram.addBot();
    await expectApiError(client(owner).POST("/v1/integrations/messenger", { body: { persona_id: theirs.id, bot_token: bot.token } }), 404, "not_found");
    const mine = await createPersona(service, owner);
    const body = { persona_id: mine.id, bot_token: "t", guild_id: GUILD, channel_ids: [] as string[] };
    await expectApiError(client(owner).POST("/v1/integrations/forum", { body }), 400, "invalid_request");
    await expectApiError(client(owner).POST("/v1/integrations/forum", { body: { ...body, channel_ids: Array.from({ length: 51 }, (_, n) => String(n)) } }), 400, "invalid_request");
    await expectApiError(client(owner).POST("/v1/integrations/forum", { body: { ...body, channel_ids: ["x".repeat(65)] } }), 400, "invalid_request");
    await expectApiError(client(owner).POST("/v1/integrations/messenger", { body: { persona_id: mine.id, bot_token: "x".repeat(501) } }), 400, "invalid_request");
    await expectApiError(client(owner).POST("/v1/integrations/messenger", { body: { persona_id: "not-a-uuid", bot_token: "t" } }), 400, "invalid_request");
    // No platform call was made for any of these.
    expect(platforms.telegram.requests.some((r) => r.path.includes("/botx"))).toBe(false);
    const key = await import("../support/users.ts").then(({ apiKeyFor }) => apiKeyFor(service, owner, ["personas:write"]));
    await expectApiError(service.clientFor({ auth: { "x-api-key": key } }).GET("/v1/integrations"), 403, "forbidden");
  });
});

describe("read, update, delete", { timeout: 90_000 }, () => {
  it("updates only the supplied fields, pauses and resumes, and refuses channel_ids on messenger", async () => {
    const persona = await createPersona(service, owner);
    const bot = platforms.discord.addBot();
    const created = await expectOk(client(owner).POST("/v1/integrations/forum", { body: { persona_id: persona.id, bot_token: bot.token, guild_id: GUILD, channel_ids: ["1", "2"] } }), 201);
    const path = { params: { path: { id: created.id } } };
    const paused = await expectOk(client(owner).PUT("/v1/integrations/{id}", { ...path, body: { active: false } }));
    expect(paused).toMatchObject({ status: "inactive", channel_ids: ["1", "2"], auto_respond: false });
    const changed = await expectOk(client(owner).PUT("/v1/integrations/{id}", { ...path, body: { channel_ids: ["3"], auto_respond: true, active: true } }));
    expect(changed).toMatchObject({ status: "active", channel_ids: ["3"], auto_respond: true });
    await expectApiError(client(owner).PUT("/v1/integrations/{id}", { ...path, body: { channel_ids: [] } }), 400, "invalid_request");

    const messengerPersona = await createPersona(service, owner);
    const messenger = await expectOk(client(owner).POST("/v1/integrations/messenger", { body: { persona_id: messengerPersona.id, bot_token: platforms.telegram.addBot().token } }), 201);
    const refused = await expectApiError(client(owner).PUT("/v1/integrations/{id}", { params: { path: { id: messenger.id } }, body: { channel_ids: ["1"] } }), 400, "invalid_request");
    expect(refused.error.details?.errors?.[0]?.path).toBe("/body/channel_ids");
  });

  it("hides another user's integration (404 on every operation) and unknown ids; a malformed id is 400", async () => {
    const persona = await createPersona(service, owner);
    const created = await expectOk(client(owner).POST("/v1/integrations/messenger", { body: { persona_id: persona.id, bot_token: platforms.telegram.addBot().token } }), 201);
    const path = { params: { path: { id: created.id } } };
    await expectApiError(client(other).GET("/v1/integrations/{id}", path), 404, "not_found");
    await expectApiError(client(other).PUT("/v1/integrations/{id}", { ...path, body: { active: false } }), 404, "not_found");
    await expectApiError(client(other).DELETE("/v1/integrations/{id}", path), 404, "not_found");
    await expectApiError(client(other).POST("/v1/integrations/{id}/test", path), 404, "not_found");
    expect((await expectOk(client(other).GET("/v1/integrations"))).total).toBe(0);
    await expectApiError(client(owner).GET("/v1/integrations/{id}", { params: { path: { id: "nope" } } }), 400, "invalid_request");
    await expectApiError(client(owner).GET("/v1/integrations/{id}", { params: { path: { id: "0193a6c4-0000-7000-8000-000000000000" } } }), 404, "not_found");
    expect((await expectOk(client(owner).GET("/v1/integrations/{id}", path))).status).toBe("active");
  });

  it("deletes: the messenger webhook is removed at the platform and the integration is gone", async () => {
    const persona = await createPersona(service, owner);
    const bot = platforms.telegram.addBot();
    const created = await expectOk(client(owner).POST("/v1/integrations/messenger", { body: { persona_id: persona.id, bot_token: bot.token } }), 201);
    expect(platforms.telegram.webhookOf(bot.token)).toBeDefined();
    const path = { params: { path: { id: created.id } } };
    expect(await expectOk(client(owner).DELETE("/v1/integrations/{id}", path))).toEqual({ id: created.id, deleted: true });
    expect(platforms.telegram.webhookOf(bot.token)).toBeUndefined();
    await expectApiError(client(owner).GET("/v1/integrations/{id}", path), 404, "not_found");
    await expectApiError(client(owner).DELETE("/v1/integrations/{id}", path), 404, "not_found");
  });

  it("deletes even when the platform is down (the failure is logged without the token)", async () => {
    const persona = await createPersona(service, owner);
    const bot = platforms.telegram.addBot();
    const created = await expectOk(client(owner).POST("/v1/integrations/messenger", { body: { persona_id: persona.id, bot_token: bot.token } }), 201);
    platforms.telegram.inject({ match: "/deleteWebhook", status: 502, body: { ok: false, error_code: 502, description: "Bad Gateway" } });
    await expectOk(client(owner).DELETE("/v1/integrations/{id}", { params: { path: { id: created.id } } }));
    expect(logs.text()).toContain("could not remove the messenger webhook");
    expect(logs.text()).not.toContain(bot.token);
  });
});

describe("test message", { timeout: 90_000 }, () => {
  it("posts a real message to the first channel on forum and workspace, and checks the token on messenger", async () => {
    const forumPersona = await createPersona(service, owner, { name: "Tester" });
    const bot = platforms.discord.addBot();
    const forum = await expectOk(client(owner).POST("/v1/integrations/forum", { body: { persona_id: forumPersona.id, bot_token: bot.token, guild_id: GUILD, channel_ids: ["884213597310459907", "2"] } }), 201);
    const tested = await expectOk(client(owner).POST("/v1/integrations/{id}/test", { params: { path: { id: forum.id } } }));
    expect(tested).toMatchObject({ id: forum.id, platform: "forum", status: "active", test_result: { success: true, error: null } });
    expect(tested.test_result.message_id).toMatch(/^\d+$/);
    expect(tested.test_result.delivered_at).not.toBeNull();
    const post = platforms.discord.posts().at(-1)!;
    expect(post.path).toBe("/api/v10/channels/884213597310459907/messages");
    expect(post.body.content).toContain("Tester");

    const slackBot = platforms.slack.addBot();
    const workspacePersona = await createPersona(service, owner);
    const workspace = await expectOk(
      client(owner).POST("/v1/integrations/workspace", { body: { persona_id: workspacePersona.id, bot_token: slackBot.token, workspace_id: slackBot.teamId, channel_ids: ["C05B8RY3N1"], signing_secret: "s" } }),
      201,
    );
    const slackTest = await expectOk(client(owner).POST("/v1/integrations/{id}/test", { params: { path: { id: workspace.id } } }));
    expect(slackTest.test_result).toMatchObject({ success: true, message_id: expect.stringMatching(/^\d+\.\d+$/) });
    expect(platforms.slack.calls("chat.postMessage").at(-1)!.body.channel).toBe("C05B8RY3N1");

    const messengerPersona = await createPersona(service, owner);
    const messenger = await expectOk(client(owner).POST("/v1/integrations/messenger", { body: { persona_id: messengerPersona.id, bot_token: platforms.telegram.addBot().token } }), 201);
    const messengerTest = await expectOk(client(owner).POST("/v1/integrations/{id}/test", { params: { path: { id: messenger.id } } }));
    expect(messengerTest.test_result).toMatchObject({ success: true, message_id: null, delivered_at: null });
  });

  it("reports a refusal as success: false with the platform's reason, and a platform that is down as 502", async () => {
    const persona = await createPersona(service, owner);
    const bot = platforms.discord.addBot();
    const forum = await expectOk(client(owner).POST("/v1/integrations/forum", { body: { persona_id: persona.id, bot_token: bot.token, guild_id: GUILD, channel_ids: ["404000"] } }), 201);
    const refused = await expectOk(client(owner).POST("/v1/integrations/{id}/test", { params: { path: { id: forum.id } } }));
    expect(refused.test_result).toMatchObject({ success: false, message_id: null, delivered_at: null, error: expect.stringContaining("Unknown Channel") });
    platforms.discord.inject({ match: "/messages", status: 503, body: { message: "unavailable", code: 0 }, times: 5 });
    await expectApiError(client(owner).POST("/v1/integrations/{id}/test", { params: { path: { id: forum.id } } }), 502, "upstream_error");
  });
});
