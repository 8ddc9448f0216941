import { afterAll, beforeAll, expect, it } from "vitest";
import { expectOk } from "../support/assertions.ts";
import { createPersona } from "../support/chat.ts";
import { eventually } from "../support/wait.ts";
import type { TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { telegramTextUpdate } from "../fakes/platforms/telegram-server.ts";
import { startPlatforms, startWithPlatforms, type Platforms } from "./helpers.ts";

// Issue 34 item 6 on a chat platform: a message too long for the model's context is not answered,
// the integration says why, and the job is not retried (it would be refused again).
// CHAT_CONTEXT_TOKENS 1024 less 256 for the reply: a message may have 376 tokens.
let platforms: Platforms;
let service: TestService;
let owner: TestUser;

beforeAll(async () => {
  platforms = await startPlatforms();
  service = await startWithPlatforms(platforms, { env: { DEFAULT_PLAN: "creator", CHAT_CONTEXT_TOKENS: "1024", CHAT_MAX_OUTPUT_TOKENS: "256" } });
  owner = await registerUser(service);
}, 120_000);

afterAll(async () => {
  await service?.close();
  await platforms?.close();
});

it("posts nothing for a message over the context's limit, records the refusal, and still answers the next one", { timeout: 90_000 }, async () => {
  const persona = await createPersona(service, owner);
  const bot = platforms.telegram.addBot();
  const integration = await expectOk(service.clientFor(owner).POST("/v1/integrations/messenger", { body: { persona_id: persona.id, bot_token: bot.token } }), 201);
  const sent = () => platforms.telegram.calls("sendMessage").filter((r) => r.path.includes(bot.token));
  const read = () => expectOk(service.clientFor(owner).GET("/v1/integrations/{id}", { params: { path: { id: integration.id } } }));

  await platforms.telegram.deliver(bot.token, telegramTextUpdate({ chatId: 11, text: "word ".repeat(400) }));
  const refused = await eventually(async () => ((await read()).last_error ? read() : undefined));
  expect(refused.last_error).toMatchObject({ code: "invalid_request", message: expect.stringContaining("over the limit of 376 tokens") });
  expect(refused.message_count).toBe(0);
  expect(sent()).toHaveLength(0);
  // Nothing was stored in the channel's conversation, and the job is done (not waiting for a retry).
  const knex = service.services.db.knex;
  expect(await knex("messages").whereIn("conversation_id", knex("integration_channels").where({ integration_id: integration.id }).select("conversation_id")).where({ role: "user" })).toHaveLength(0);

  await platforms.telegram.deliver(bot.token, telegramTextUpdate({ chatId: 11, text: "A short one?" }));
  await eventually(async () => sent().length === 1);
  expect(await knex("graphile_worker._private_jobs").where("last_error", "like", "%tokens%").count({ n: "*" }).first().then((row) => Number(row!.n))).toBe(0);
});
