import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { integrationsAccountData } from "../../server/integrations/account-data.ts";
import { expectOk } from "../support/assertions.ts";
import { createPersona, eventually } from "../support/chat.ts";
import type { TestService } from "../support/service.ts";
import { registerUser } from "../support/users.ts";
import { telegramTextUpdate } from "../fakes/platforms/telegram-server.ts";
import { startPlatforms, startWithPlatforms, type Platforms } from "./helpers.ts";

// The integrations' part of the data export (no token, no secret) and of the account purge
// (disconnects at the platform first), called directly.

let platforms: Platforms;
let service: TestService;
const [section, runtime] = integrationsAccountData;

beforeAll(async () => {
  platforms = await startPlatforms();
  service = await startWithPlatforms(platforms, { env: { DEFAULT_PLAN: "creator" } });
});
afterAll(async () => {
  await service?.close();
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
});
