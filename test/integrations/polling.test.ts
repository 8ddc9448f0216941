import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectOk } from "../support/assertions.ts";
import { createPersona } from "../support/chat.ts";
import { eventually } from "../support/wait.ts";
import type { TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { telegramTextUpdate } from "../fakes/platforms/telegram-server.ts";
import { startPlatforms, startWithPlatforms, type Platforms } from "./helpers.ts";

// Messenger bots on a server the platform cannot call back (TELEGRAM_UPDATES=polling, the default
// without an HTTPS PUBLIC_BASE_URL): no webhook, a worker long-polls each bot under the same lease
// as the forum gateways.

let platforms: Platforms;
let service: TestService;
let owner: TestUser;

beforeAll(async () => {
  platforms = await startPlatforms();
  service = await startWithPlatforms(platforms, { env: { TELEGRAM_UPDATES: "polling", DEFAULT_PLAN: "creator", INTEGRATIONS_LEASE_MS: "900" } });
  owner = await registerUser(service);
}, 120_000);
afterAll(async () => {
  await service?.close();
  await platforms?.close();
});

describe("messenger polling", { timeout: 90_000 }, () => {
  it("removes any webhook at connection, polls for updates from a worker and answers them, once each", async () => {
    const persona = await createPersona(service, owner);
    const bot = platforms.telegram.addBot();
    const created = await expectOk(service.clientFor(owner).POST("/v1/integrations/messenger", { body: { persona_id: persona.id, bot_token: bot.token } }), 201);
    expect(platforms.telegram.webhookOf(bot.token)).toBeUndefined();
    expect(platforms.telegram.calls("deleteWebhook").some((r) => r.path.includes(bot.token))).toBe(true);
    await eventually(async () => (await service.services.db.knex("integration_leases").where({ integration_id: created.id })).length === 1);

    const update = telegramTextUpdate({ chatId: 515, text: "Are you polling?" });
    platforms.telegram.enqueue(bot.token, update);
    const sent = () => platforms.telegram.calls("sendMessage").filter((r) => r.path.includes(bot.token));
    await eventually(async () => sent().length === 1);
    expect(sent()[0]!.body.chat_id).toBe("515");
    // The next poll confirms the update by its offset, so the platform does not hand it out again.
    platforms.telegram.enqueue(bot.token, { ...update });
    platforms.telegram.enqueue(bot.token, telegramTextUpdate({ chatId: 515, text: "And again?" }));
    await eventually(async () => sent().length === 2);
    await eventually(async () => (await expectOk(service.clientFor(owner).GET("/v1/integrations/{id}", { params: { path: { id: created.id } } }))).message_count === 2);
    const polls = platforms.telegram.calls("getUpdates").filter((r) => r.path.includes(bot.token));
    expect(polls.at(-1)!.body).toMatchObject({ timeout: 25, allowed_updates: ["message"] });
    expect(Number(polls.at(-1)!.body.offset)).toBeGreaterThan(Number(update.update_id));

    // No webhook secret exists, so the webhook endpoint takes nothing for this bot.
    const forged = await service.api.POST("/v1/integrations/{id}/messenger/updates", {
      params: { path: { id: created.id }, header: { "X-Telegram-Bot-Api-Secret-Token": "" } },
      body: update as { update_id: number },
    });
    expect(forged.response.status).toBe(401);

    await expectOk(service.clientFor(owner).DELETE("/v1/integrations/{id}", { params: { path: { id: created.id } } }));
  });
});
