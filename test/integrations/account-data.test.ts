import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { integrationsAccountData } from "../../server/areas/integrations/account-data.ts";
import { expectOk } from "../support/assertions.ts";
import { createPersona } from "../support/chat.ts";
import { eventually } from "../support/wait.ts";
import type { TestService } from "../support/service.ts";
import { registerUser } from "../support/users.ts";
import { telegramTextUpdate } from "../fakes/platforms/telegram-server.ts";
import { archiveOf, purgeDeletedAccounts } from "../support/account-data.ts";
import { startFakeDiscord, type FakeDiscord } from "../fakes/platforms/discord-server.ts";
import { platformEnv, startPlatforms, startWithPlatforms, type Platforms } from "./helpers.ts";

// The integrations' part of the data export (no token, no secret) and of the account purge
// (disconnects at the platform first), called directly.

let platforms: Platforms;
let discord: FakeDiscord;
let service: TestService;
let clock = Date.now();
const [section, runtime] = integrationsAccountData;

beforeAll(async () => {
  platforms = await startPlatforms();
  discord = await startFakeDiscord();
  service = await startWithPlatforms(platforms, { now: () => new Date(clock), env: { ...platformEnv({ ...platforms, discord }), DEFAULT_PLAN: "creator", INTEGRATIONS_LEASE_MS: "900" } });
}, 120_000);
afterAll(async () => {
  await service?.close();
  await discord?.close();
  await platforms?.close();
});

describe("integrations account data", { timeout: 90_000 }, () => {
  it("exports the user's integrations with their channels' conversations, without tokens or secrets", async () => {
    const user = await registerUser(service);
    const other = await registerUser(service);
    const persona = await createPersona(service, user);
    const bot = platforms.telegram.addBot();
    const created = await expectOk(service.clientFor(user).POST("/v1/integrations/messenger", { body: { persona_id: persona.id, bot_token: bot.token } }), 201);
    const slackBot = platforms.slack.addBot();
    await expectOk(
      service.clientFor(user).POST("/v1/integrations/workspace", { body: { persona_id: persona.id, bot_token: slackBot.token, workspace_id: slackBot.teamId, channel_ids: ["C1"], signing_secret: "the-signing-secret" } }),
      201,
    );
    await platforms.telegram.deliver(bot.token, telegramTextUpdate({ chatId: 31, text: "hi" }));
    await eventually(async () => (await service.services.db.knex("integration_channels").where({ integration_id: created.id })).length === 1);
    const rows = await section!.exportRows!({ services: service.services, knex: service.services.db.knex, userId: user.id, personaIds: [persona.id] });
    expect(rows).toHaveLength(2);
    const messenger = rows.find((row) => row.id === created.id)!;
    expect(messenger).toMatchObject({ platform: "messenger", persona_id: persona.id, bot_username: bot.username, channels: [{ channel_id: "31", conversation_id: expect.any(String) }] });
    const text = JSON.stringify(rows);
    expect(text).not.toContain(bot.token);
    expect(text).not.toContain(slackBot.token);
    expect(text).not.toContain("the-signing-secret");
    expect(text).not.toContain(platforms.telegram.webhookOf(bot.token)!.secret);
    expect(text).not.toMatch(/token_encrypted|secret_encrypted/);
    expect(await section!.exportRows!({ services: service.services, knex: service.services.db.knex, userId: other.id, personaIds: [] })).toEqual([]);
    expect(runtime!.withheld).toBeTruthy();
    expect([...section!.tables, ...runtime!.tables].sort()).toEqual(["integration_channels", "integration_events", "integration_leases", "integrations"]);
  });

  it("purge disconnects first: the messenger webhook is removed at the platform and the integrations are gone, even if the platform fails for one", async () => {
    const user = await registerUser(service);
    const keep = await registerUser(service);
    const [first, second] = [platforms.telegram.addBot(), platforms.telegram.addBot()];
    const kept = platforms.telegram.addBot();
    for (const [owner, bot] of [[user, first], [user, second], [keep, kept]] as const) {
      const persona = await createPersona(service, owner);
      await expectOk(service.clientFor(owner).POST("/v1/integrations/messenger", { body: { persona_id: persona.id, bot_token: bot.token } }), 201);
    }
    platforms.telegram.inject({ match: `${first.token}/deleteWebhook`, status: 500, body: { ok: false, error_code: 500, description: "Internal Server Error" } });
    await section!.beforePurge!(service.services, [user.id]);
    expect(platforms.telegram.webhookOf(second.token)).toBeUndefined();
    expect(platforms.telegram.webhookOf(kept.token)).toBeDefined();
    expect(await service.services.db.knex("integrations").where({ user_id: user.id })).toHaveLength(0);
    expect(await service.services.db.knex("integrations").where({ user_id: keep.id })).toHaveLength(1);
  });

  it("end to end: the registered sections put integrations in the archive, and the account purge disconnects every bot", async () => {
    const user = await registerUser(service);
    const persona = await createPersona(service, user);
    const messengerBot = platforms.telegram.addBot();
    const forumBot = discord.addBot();
    await expectOk(service.clientFor(user).POST("/v1/integrations/messenger", { body: { persona_id: persona.id, bot_token: messengerBot.token } }), 201);
    await expectOk(service.clientFor(user).POST("/v1/integrations/forum", { body: { persona_id: persona.id, bot_token: forumBot.token, guild_id: "884213597310459904", channel_ids: ["884213597310459907"] } }), 201);
    await eventually(async () => discord.liveSessions(forumBot.token) === 1);

    const archive = await archiveOf(service.services, user.id);
    expect(archive.integrations.map((row) => row.platform).sort()).toEqual(["forum", "messenger"]);
    expect(JSON.stringify(archive)).not.toContain(messengerBot.token);
    expect(JSON.stringify(archive)).not.toContain(forumBot.token);

    await expectOk(service.clientFor(user).DELETE("/v1/auth/me"));
    clock += 31 * 86_400_000;
    try {
      expect((await purgeDeletedAccounts(service.services)).users).toBeGreaterThanOrEqual(1);
    } finally {
      clock = Date.now();
    }
    expect(platforms.telegram.webhookOf(messengerBot.token)).toBeUndefined();
    await eventually(async () => discord.liveSessions(forumBot.token) === 0);
    expect(await service.services.db.knex("integrations").where({ user_id: user.id })).toHaveLength(0);
  });
});
