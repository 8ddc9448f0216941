import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { APICallError, generateText, streamText } from "ai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createConversation, createPersona } from "../support/chat.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";

// A second client with its own SSE parser: the Vercel AI SDK's OpenAI-compatible provider, so the
// endpoint is not tuned to the `openai` package alone.
let fake: FakeOpenAI;
let service: TestService;
let alice: TestUser;
let persona: { id: string };
let provider: ReturnType<typeof createOpenAICompatible>;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  service = await startTestService({ env: { OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "sk-test-secret", LLM_MAX_RETRIES: "0" } });
  alice = await registerUser(service);
  persona = await createPersona(service, alice, { instructions: "You are Captain Nova.", greeting_message: "Welcome aboard!" });
  provider = createOpenAICompatible({ name: "persona", baseURL: `${service.url}/openai/v1`, apiKey: await apiKeyFor(service, alice, ["chat"]), includeUsage: true });
});

beforeEach(() => fake.reset());

afterAll(async () => {
  await service?.close();
  await fake?.close();
});

const sentMessages = () => (fake.requests.find((request) => request.path === "/v1/chat/completions")!.body as { messages: unknown[] }).messages;

describe("the Vercel AI SDK's OpenAI-compatible provider", () => {
  it("generates a whole reply with usage, the client's system text after the persona's", async () => {
    fake.chat.next({ reply: "Venus, cadet." });
    const result = await generateText({ model: provider(persona.id), system: "Be brief.", prompt: "Which planet?", maxRetries: 0 });
    expect(result.text).toBe("Venus, cadet.");
    expect(result.finishReason).toBe("stop");
    expect(result.usage.inputTokens).toBeGreaterThan(0);
    expect(result.usage.outputTokens).toBeGreaterThan(0);
    expect(sentMessages()).toEqual([
      { role: "system", content: "You are Captain Nova." },
      { role: "system", content: "Be brief." },
      { role: "assistant", content: "Welcome aboard!" },
      { role: "user", content: "Which planet?" },
    ]);
  });

  it("streams a reply chunk by chunk, with the usage of the last chunk", async () => {
    fake.chat.next({ chunks: ["Ve", "nus", ", cadet."] });
    const result = streamText({ model: provider(persona.id), prompt: "Which planet?", maxRetries: 0 });
    const parts: string[] = [];
    for await (const part of result.textStream) parts.push(part);
    expect(parts.join("")).toBe("Venus, cadet.");
    expect(parts.length).toBeGreaterThan(1);
    expect(await result.finishReason).toBe("stop");
    expect((await result.usage).outputTokens).toBeGreaterThan(0);
  });

  it("stores a streamed exchange in a conversation named by header", async () => {
    const conversation = await createConversation(service, alice, persona.id, "AI SDK");
    const result = streamText({ model: provider(persona.id), prompt: "Store this", headers: { "X-Persona-Conversation-Id": conversation.id }, maxRetries: 0 });
    expect(await result.text).toBe("Echo: Store this");
    // After the conversation's greeting, stored when it was created.
    const stored = await service.services.db.knex("messages").where({ conversation_id: conversation.id }).orderBy([{ column: "depth" }, { column: "created_at" }]);
    expect(stored.map((m) => m.content)).toEqual(["Welcome aboard!", "Store this", "Echo: Store this"]);
  });

  it("reads an unknown model as an API error carrying OpenAI's message", async () => {
    const failure = await generateText({ model: provider("no-such-persona"), prompt: "Hi", maxRetries: 0 }).catch((error: unknown) => error);
    expect(APICallError.isInstance(failure)).toBe(true);
    expect((failure as APICallError).statusCode).toBe(404);
    expect((failure as APICallError).message).toMatch(/does not exist or you do not have access/);
  });
});

describe("the SDK's openaiBaseUrl", () => {
  it("points the openai package at the endpoint, with or without a trailing slash", async () => {
    const { openaiBaseUrl } = await import("../../sdk/src/index.ts");
    expect(openaiBaseUrl("http://127.0.0.1:3000/")).toBe("http://127.0.0.1:3000/openai/v1");
    expect(openaiBaseUrl(service.url)).toBe(`${service.url}/openai/v1`);
  });
});
