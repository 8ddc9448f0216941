import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { expectApiError, expectOk } from "../support/assertions.ts";
import { databaseKind, startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";

// The OpenAI moderation provider (issue 41, item 5): MODERATION_PROVIDER=openai checks through the
// `openai` package's moderations endpoint, here against the fake OpenAI server on loopback; chat
// stays on its own (offline) provider. A failing provider is 502 and nothing is saved.
let fake: FakeOpenAI;
let service: TestService;
let author: TestUser;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  service = await startTestService({
    env: { MODERATION_PROVIDER: "openai", MODERATION_BASE_URL: fake.baseUrl, MODERATION_API_KEY: "sk-moderation-key", MODERATION_ACTION: "refuse", LLM_MAX_RETRIES: "0" },
  });
  author = await registerUser(service);
});
afterAll(async () => {
  await service?.close();
  await fake?.close();
});
beforeEach(() => fake.reset());

const create = (description: string) =>
  service.clientFor(author).POST("/v1/personas", { body: { name: "Checked", instructions: "Be kind.", description, is_public: true } });

describe(`the openai moderation provider (${databaseKind})`, () => {
  it("sends the public texts to the moderation endpoint and refuses what it flags, naming the categories", async () => {
    const refused = await expectApiError(create("FLAG:harassment in every answer"), 400, "content_flagged");
    expect(refused.error.details).toEqual({ provider: "openai", categories: ["harassment"] });
    const [call] = fake.requests.filter((request) => request.path === "/v1/moderations");
    expect(call?.body).toMatchObject({ model: "omni-moderation-latest", input: expect.arrayContaining(["FLAG:harassment in every answer", "Be kind."]) });
    expect(call?.headers.authorization).toBe("Bearer sk-moderation-key");
  });

  it("lets unflagged text through", async () => {
    const persona = await expectOk(create("A gentle guide."), 201);
    expect(persona.is_public).toBe(true);
  });

  it("answers 502 when the provider fails, and saves nothing", async () => {
    const before = (await expectOk(service.clientFor(author).GET("/v1/personas"))).total;
    fake.moderations.next({ status: 500 });
    const failed = await expectApiError(create("A gentle guide."), 502, "upstream_error");
    expect(failed.error.message).toContain("MODERATION_PROVIDER");
    expect((await expectOk(service.clientFor(author).GET("/v1/personas"))).total).toBe(before);
  });

  it("sends nothing for a private persona", async () => {
    await expectOk(service.clientFor(author).POST("/v1/personas", { body: { name: "Private", instructions: "FLAG:harassment" } }), 201);
    expect(fake.requests.filter((request) => request.path === "/v1/moderations")).toEqual([]);
  });
});
