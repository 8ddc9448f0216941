import { beforeAll, describe, expect, it } from "vitest";
import type { FakeOpenAI } from "../fakes/openai-server.ts";
import { expectError } from "../support/assertions.ts";
import { useServiceWithFakeOpenAI } from "../support/fixtures.ts";
import type { TestService } from "../support/service.ts";
import type { TestUser } from "../support/users.ts";
import { colours, fetchPng, generate, pathOf } from "./helpers.ts";

// The `openai` image provider against a fake OpenAI API on loopback, through the real `openai` package.
let fake: FakeOpenAI;
let service: TestService;
let alice: TestUser;

const fixture = useServiceWithFakeOpenAI({ IMAGES_PROVIDER: "openai", LLM_PROVIDER: "local", AUTO_AVATARS: "false" });
beforeAll(() => void ({ fake, service, alice } = fixture));

describe("images through the openai provider", () => {
  it("asks for the model's nearest size with the style's framing, and crops the b64_json answer to the contract's size", async () => {
    const body = await (await generate(service, alice.auth, { prompt: "A starship bridge at night", style: "banner", aspect_ratio: "16:9" })).json();
    expect(body).toMatchObject({ width: 1024, height: 576 });
    const sent = fake.requests.find((r) => r.path === "/v1/images/generations")?.body as Record<string, unknown>;
    expect(sent).toMatchObject({ model: "gpt-image-1", n: 1, size: "1536x1024", prompt: expect.stringMatching(/^A wide landscape banner.*A starship bridge at night$/) });
    expect(sent).not.toHaveProperty("response_format");
    const { png } = await fetchPng(service, body.url);
    expect([png.width, png.height]).toEqual([1024, 576]);
    expect(colours(png)).toBeGreaterThan(8);
    const row = await service.services.db.knex("images").where({ url: pathOf(body.url) }).first();
    expect(row.provider).toBe("openai");
  });

  it("fetches an answer given as a url", async () => {
    fake.images.next({ format: "url" });
    const body = await (await generate(service, alice.auth, { prompt: "Portrait of a wise owl", aspect_ratio: "9:16", style: "avatar" })).json();
    expect(body).toMatchObject({ width: 576, height: 1024 });
    expect(fake.requests.map((r) => r.path)).toEqual(["/v1/images/generations", "/files/1.png"]);
    expect((fake.requests[0]!.body as { size: string; prompt: string }).size).toBe("1024x1536");
    expect((fake.requests[0]!.body as { prompt: string }).prompt).toMatch(/^A portrait for a square profile picture/);
    const { png } = await fetchPng(service, body.url);
    expect([png.width, png.height]).toEqual([576, 1024]);
  });

  it.each([429, 500])("answers 502 upstream_error when the upstream answers %i, and stores nothing", async (status) => {
    fake.images.next({ status, errorBody: { error: { message: "Incorrect API key provided: sk-test-secret-key", type: "x", code: null } } });
    const before = await service.services.db.knex("images").count<{ count: string }[]>("* as count");
    const error = await expectError(await generate(service, alice.auth, { prompt: "A cat" }), 502, "upstream_error");
    expect(JSON.stringify(error)).not.toContain("sk-test");
    expect(await service.services.db.knex("images").count<{ count: string }[]>("* as count")).toEqual(before);
  });

  it("answers 502 when the upstream sends something that is not an image", async () => {
    fake.images.next({ bytes: new TextEncoder().encode("<html>oops</html>") });
    await expectError(await generate(service, alice.auth, { prompt: "A cat" }), 502, "upstream_error");
  });
});
