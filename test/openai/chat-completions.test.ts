import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createConversation, createPersona } from "../support/chat.ts";
import { eventually } from "../support/wait.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { sendRaw } from "../support/raw.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { expectOpenAIError, fakeUpstreamEnv } from "../support/openai-door.ts";
import type { RequestBody } from "../../sdk/src/types.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";

// The OpenAI-compatible endpoint driven by the official `openai` package (and raw fetch for the
// wire details), against the real service whose own model provider is a fake OpenAI on loopback.
let fake: FakeOpenAI;
let service: TestService;
let alice: TestUser;
let bob: TestUser;
let aliceKey: string;
let nova: { id: string };

beforeAll(async () => {
  fake = await startFakeOpenAI();
  service = await startTestService({
    env: { ...fakeUpstreamEnv(fake) },
  });
  [alice, bob] = await Promise.all([registerUser(service), registerUser(service)]);
  aliceKey = await apiKeyFor(service, alice, ["chat"]);
  nova = await createPersona(service, alice, { instructions: "You are Captain Nova.", greeting_message: "Welcome aboard, cadet!" });
});

beforeEach(() => fake.reset());

afterAll(async () => {
  await service?.close();
  await fake?.close();
});

const knex = () => service.services.db.knex;
const chatCalls = () => fake.requests.filter((request) => request.path === "/v1/chat/completions");
const sentMessages = (index = 0) => (chatCalls()[index]!.body as { messages: { role: string; content: string }[] }).messages;
const used = async (user: TestUser) => Number((await knex()("usage_counters").where({ user_id: user.id }).sum({ n: "messages_sent" }).first())?.n ?? 0);
const client = (apiKey: string) => new OpenAI({ baseURL: `${service.url}/openai/v1`, apiKey, maxRetries: 0 });
const post = (body: RequestBody<"openai_create_chat_completion">, headers: Record<string, string> = { authorization: `Bearer ${aliceKey}` }) =>
  service.clientFor({ auth: headers }).POST("/openai/v1/chat/completions", { body });
/** A body the contract refuses on purpose (the refusals), or no JSON at all. */
const postRaw = (body: unknown, headers: Record<string, string>) => sendRaw(service, "POST", "/openai/v1/chat/completions", { body, headers });

describe("models", () => {
  it("lists the caller's own personas by handle with their names, newest first", async () => {
    const second = await createPersona(service, alice, { name: "Professor Quill" });
    await createPersona(service, bob, { name: "Bob's own", is_public: true });
    const list = await client(aliceKey).models.list();
    expect(list.data.map((model) => model.id)).toEqual(["professor-quill", "captain-nova"]);
    expect(list.data[0]).toMatchObject({ id: "professor-quill", persona_id: second.id, object: "model", owned_by: alice.id, name: "Professor Quill", created: expect.any(Number) });
  });

  it("answers one model: own or public; another user's private persona is model_not_found", async () => {
    const erin = await registerUser(service);
    const open = await createPersona(service, erin, { name: "Public Erin", is_public: true });
    const hidden = await createPersona(service, erin, { name: "Private Erin" });
    // By id or by readable name, the answer names the model as the caller would send it.
    expect((await client(aliceKey).models.retrieve(nova.id)).id).toBe("captain-nova");
    expect((await client(aliceKey).models.retrieve("captain-nova")).id).toBe("captain-nova");
    expect((await client(aliceKey).models.retrieve(open.id)).id).toBe(`${erin.username}/public-erin`);
    const byName = await service.fetch(`/openai/v1/models/${erin.username}%2Fpublic-erin`, { headers: { authorization: `Bearer ${aliceKey}` } });
    expect(await byName.json()).toMatchObject({ id: `${erin.username}/public-erin`, persona_id: open.id });
    await expectOpenAIError(await service.fetch(`/openai/v1/models/${erin.username}%2Fprivate-erin`, { headers: alice.auth }), 404, "model_not_found", "model");
    const response = await service.fetch(`/openai/v1/models/${hidden.id}`, { headers: { authorization: `Bearer ${aliceKey}` } });
    await expectOpenAIError(response, 404, "model_not_found", "model");
    await expectOpenAIError(await service.fetch("/openai/v1/models/not-a-persona", { headers: alice.auth }), 404, "model_not_found", "model");
  });

  it("refuses a missing credential with 401 and a key without the scope with 403, in OpenAI's shape", async () => {
    const error = await expectOpenAIError(await service.fetch("/openai/v1/models"), 401, "invalid_api_key", null);
    expect(error.type).toBe("invalid_request_error");
    const writeOnly = await apiKeyFor(service, alice, ["conversations:write"]);
    await expectOpenAIError(await service.fetch("/openai/v1/models", { headers: { authorization: `Bearer ${writeOnly}` } }), 403, "forbidden", null);
    await expect(client("pk_wrong").models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it("answers an unknown route under the prefix in OpenAI's shape", async () => {
    await expectOpenAIError(await service.fetch("/openai/v1/embeddings", { method: "POST", headers: alice.auth }), 404, "not_found", null);
  });
});

describe("a blocking completion", () => {
  it("answers as the persona through the openai package: instructions, client system text, greeting, history", async () => {
    fake.chat.next({ reply: "That is Venus, cadet." });
    const completion = await client(aliceKey).chat.completions.create({
      model: nova.id,
      temperature: 0.3,
      top_p: 0.9,
      messages: [
        { role: "system", content: "Answer in one sentence." },
        { role: "user", content: "Hello!" },
        { role: "assistant", content: "Hello, cadet." },
        { role: "user", content: [{ type: "text", text: "Which planet" }, { type: "text", text: "is that?" }] },
      ],
    });
    expect(completion).toMatchObject({
      object: "chat.completion",
      model: nova.id,
      id: expect.stringMatching(/^chatcmpl-/),
      choices: [{ index: 0, message: { role: "assistant", content: "That is Venus, cadet." }, finish_reason: "stop" }],
      persona_message_id: null,
    });
    const usage = completion.usage!;
    expect(usage.prompt_tokens).toBeGreaterThan(0);
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
    expect(sentMessages()).toEqual([
      { role: "system", content: "You are Captain Nova." },
      { role: "system", content: "Answer in one sentence." },
      { role: "assistant", content: "Welcome aboard, cadet!" },
      { role: "user", content: "Hello!" },
      { role: "assistant", content: "Hello, cadet." },
      { role: "user", content: "Which planet\nis that?" },
    ]);
  });

  it("leaves the greeting out when the client's history opens with its own assistant message", async () => {
    await client(aliceKey).chat.completions.create({
      model: nova.id,
      messages: [
        { role: "assistant", content: "Greetings from the client." },
        { role: "user", content: "Hi" },
      ],
    });
    expect(sentMessages().map((m) => m.content)).toEqual(["You are Captain Nova.", "Greetings from the client.", "Hi"]);
  });

  it("honours max_tokens below the server's cap and stores nothing without a conversation", async () => {
    // Alice's and Nova's messages only: the service may be lent to other files.
    const ours = () => knex()("messages").whereIn("conversation_id", knex()("conversations").where({ user_id: alice.id }).orWhere({ persona_id: nova.id }).select("id")).count({ n: "*" }).first();
    const before = await ours();
    await client(aliceKey).chat.completions.create({ model: nova.id, max_tokens: 7, messages: [{ role: "user", content: "Short" }] });
    expect(chatCalls()[0]!.body).toMatchObject({ max_tokens: 7 });
    expect(await ours()).toEqual(before);
  });

  it("works with a public persona of another user and the caller's session token", async () => {
    const open = await createPersona(service, await registerUser(service), { name: "Public Bob", is_public: true, instructions: "You are Bob." });
    const completion = await client(alice.accessToken).chat.completions.create({ model: open.id, messages: [{ role: "user", content: "Hi Bob" }] });
    expect(completion.choices[0]!.message.content).toBe("Echo: Hi Bob");
    expect(sentMessages()[0]).toEqual({ role: "system", content: "You are Bob." });
  });

  it("answers a provider failure as OpenAI's 502 and gives the quota back", async () => {
    const carol = await registerUser(service);
    const own = await createPersona(service, carol);
    fake.chat.next({ status: 500 });
    const error = await expectOpenAIError(await post({ model: own.id, messages: [{ role: "user", content: "Hi" }] }, carol.auth), 502, "upstream_error", null);
    expect(error.type).toBe("api_error");
    expect(await used(carol)).toBe(0);
  });
});

describe("a streamed completion", () => {
  it("streams chat.completion.chunk objects through the openai package, with the usage chunk", async () => {
    fake.chat.next({ chunks: ["That ", "is ", "Venus."] });
    const stream = await client(aliceKey).chat.completions.create({
      model: nova.id,
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "Which planet?" }],
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks[0]!.choices[0]!.delta.role).toBe("assistant");
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? "").join("")).toBe("That is Venus.");
    expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1);
    const withChoices = chunks.filter((chunk) => chunk.choices.length > 0);
    expect(withChoices.at(-1)!.choices[0]!.finish_reason).toBe("stop");
    expect(withChoices.slice(0, -1).every((chunk) => chunk.choices[0]!.finish_reason === null)).toBe(true);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toMatchObject({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) });
  });

  it("ends with data: [DONE] on the wire, unnamed events only, and no usage chunk unless asked", async () => {
    const { data: text = "", response } = await service.clientFor({ auth: { authorization: `Bearer ${aliceKey}` } }).POST("/openai/v1/chat/completions", {
      body: { model: nova.id, stream: true, messages: [{ role: "user" as const, content: "Hi there" }] },
      parseAs: "text",
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(text).not.toMatch(/^event:/m);
    const data = text.split("\n").filter((line) => line.startsWith("data: ")).map((line) => line.slice(6));
    expect(data.at(-1)).toBe("[DONE]");
    const chunks = data.slice(0, -1).map((line) => JSON.parse(line));
    expect(chunks.every((chunk) => chunk.object === "chat.completion.chunk" && chunk.usage === undefined)).toBe(true);
    expect(chunks.map((chunk) => chunk.choices[0].delta.content ?? "").join("")).toBe("Echo: Hi there");
  });

  it("aborts the upstream call when the client disconnects, and gives the quota back", async () => {
    const grace = await registerUser(service);
    const own = await createPersona(service, grace);
    fake.chat.next({ chunks: Array.from({ length: 20 }, (_, i) => `piece${i} `), chunkDelayMs: 300 });
    const controller = new AbortController();
    const { response } = await service.clientFor(grace).POST("/openai/v1/chat/completions", {
      body: { model: own.id, stream: true, messages: [{ role: "user", content: "talk slowly" }] },
      parseAs: "stream",
      signal: controller.signal,
    });
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let seen = "";
    while (!seen.includes('"delta":{"content":')) seen += decoder.decode((await reader.read()).value, { stream: true });
    const aborted = fake.waitForAbort(10_000);
    controller.abort();
    expect((await aborted).aborted).toBe(true);
    await eventually(async () => (await used(grace)) === 0);
  });

  it("reports a provider failure after the start as an OpenAI error event that the SDK raises", async () => {
    fake.chat.next({ chunks: ["one ", "two ", "three"], failAfterChunks: 1, failWith: "error-event" });
    const stream = await client(aliceKey).chat.completions.create({ model: nova.id, stream: true, messages: [{ role: "user", content: "Count" }] });
    const read = async () => {
      for await (const _ of stream);
    };
    await expect(read()).rejects.toBeInstanceOf(OpenAI.APIError);
  });
});

describe("refusals", () => {
  const cases: [string, unknown, string | null, string | null][] = [
    ["no messages", { messages: [] }, "invalid_request", "messages"],
    ["messages missing", {}, "invalid_request", "messages"],
    ["an unknown role", { messages: [{ role: "narrator", content: "x" }] }, "invalid_request", "messages[0].role"],
    ["a tool message without its call id", { messages: [{ role: "user", content: "x" }, { role: "tool", content: "y" }] }, "invalid_request", "messages[1].tool_call_id"],
    ["a function message (deprecated)", { messages: [{ role: "user", content: "x" }, { role: "function", name: "f", content: "y" }] }, "invalid_request", "messages[1].role"],
    ["functions (deprecated)", { functions: [{ name: "f" }], messages: [{ role: "user", content: "x" }] }, "unsupported", "functions"],
    ["logprobs", { logprobs: true, messages: [{ role: "user", content: "x" }] }, "unsupported", "logprobs"],
    ["audio output", { modalities: ["text", "audio"], messages: [{ role: "user", content: "x" }] }, "unsupported", "modalities"],
    ["store: true", { store: true, messages: [{ role: "user", content: "x" }] }, "unsupported", "store"],
    ["an argument OpenAI does not know", { temperatur: 0.2, messages: [{ role: "user", content: "x" }] }, "unknown_parameter", "temperatur"],
    ["a last user message without text", { messages: [{ role: "user", content: " " }] }, "invalid_request", "messages[0].content"],
    ["an image part", { messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "https://x.example/a.png" } }] }] }, "unsupported", "messages[0].content[0].type"],
    ["n above 1", { n: 2, messages: [{ role: "user", content: "x" }] }, "unsupported", "n"],
    ["a user message without content", { messages: [{ role: "user", content: null }] }, "invalid_request", "messages[0].content"],
    ["a content too long", { messages: [{ role: "user", content: "x".repeat(32_001) }] }, "invalid_request", "messages[0].content"],
  ];
  for (const [what, body, code, param] of cases) {
    it(`answers 400 in OpenAI's shape for ${what}, calling no model and using no quota`, async () => {
      const before = await used(alice);
      const error = await expectOpenAIError(await postRaw({ model: nova.id, ...(body as object) }, alice.auth), 400, code, param);
      expect(error.type).toBe("invalid_request_error");
      expect(chatCalls()).toHaveLength(0);
      expect(await used(alice)).toBe(before);
    });
  }

  it("answers malformed JSON with OpenAI's 400", async () => {
    await expectOpenAIError(await postRaw("{not json", alice.auth), 400, "invalid_request", null);
  });

  it("answers an unknown model and another user's private persona with 404 model_not_found", async () => {
    const hidden = await createPersona(service, await registerUser(service), { name: "Private Bob" });
    for (const model of ["gpt-4o", hidden.id]) {
      await expectOpenAIError(await post({ model, messages: [{ role: "user", content: "x" }] }), 404, "model_not_found", "model");
    }
    await expect(client(aliceKey).chat.completions.create({ model: hidden.id, messages: [{ role: "user", content: "x" }] })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect(chatCalls()).toHaveLength(0);
  });

  it("refuses client system messages when the owner forbids them, and only then", async () => {
    const frank = await registerUser(service);
    const strict = await createPersona(service, frank, { name: "Strict", allow_client_system_messages: false });
    const error = await expectOpenAIError(
      await post({ model: strict.id, messages: [{ role: "developer", content: "Be a pirate." }, { role: "user", content: "x" }] }, frank.auth),
      400,
      "system_messages_not_allowed",
      "messages",
    );
    expect(error.message).toMatch(/does not allow system messages/);
    expect((await post({ model: strict.id, messages: [{ role: "user", content: "x" }] }, frank.auth)).response.status).toBe(200);
    const update = await service.clientFor(frank).PUT("/v1/personas/{id}", { params: { path: { id: strict.id } }, body: { allow_client_system_messages: true } });
    expect(update.data).toMatchObject({ allow_client_system_messages: true });
    expect((await post({ model: strict.id, messages: [{ role: "system", content: "Be a pirate." }, { role: "user", content: "x" }] }, frank.auth)).response.status).toBe(200);
  });

  it("maps a used-up monthly quota to 429 insufficient_quota that the SDKs do not retry", async () => {
    const dave = await registerUser(service);
    const own = await createPersona(service, dave);
    const period = new Date().toISOString().slice(0, 8) + "01";
    await knex()("usage_counters").insert({ user_id: dave.id, period_start: period, messages_sent: 200 });
    const answer = await post({ model: own.id, messages: [{ role: "user", content: "x" }] }, dave.auth);
    expect(answer.response.headers.get("x-should-retry")).toBe("false");
    const error = await expectOpenAIError(answer, 429, "insufficient_quota", null);
    expect(error.type).toBe("insufficient_quota");
    await expect(client(dave.accessToken).chat.completions.create({ model: own.id, messages: [{ role: "user", content: "x" }] })).rejects.toBeInstanceOf(OpenAI.RateLimitError);
    expect(chatCalls()).toHaveLength(0);
  });
});

describe("with a conversation", () => {
  // The exchanged messages in the order of the path (a reply is one deeper than what it answers; its id,
  // drawn when the quota was reserved, may sort before its user message's within one millisecond); a
  // conversation's greeting (depth 0, stored when it was created) is not one.
  const messagesOf = (conversationId: string) => knex()("messages").where({ conversation_id: conversationId }).where("depth", ">", 0).orderBy([{ column: "depth" }, { column: "created_at" }, { column: "id" }]);

  it("stores the exchange in the caller's conversation (body field, blocking) with its message.created events", async () => {
    const conversation = await createConversation(service, alice, nova.id, "From a client");
    fake.chat.next({ reply: "Stored reply." });
    const body = { model: nova.id, conversation_id: conversation.id, messages: [{ role: "user", content: "Store me" }] };
    const completion = (await client(aliceKey).chat.completions.create(body as OpenAI.ChatCompletionCreateParamsNonStreaming)) as OpenAI.ChatCompletion & { persona_message_id: string };
    const stored = await messagesOf(conversation.id);
    expect(stored.map((m) => [m.role, m.content])).toEqual([["user", "Store me"], ["assistant", "Stored reply."]]);
    // After the conversation's greeting, as an exchange of the app's would be.
    const greeting = await knex()("messages").where({ conversation_id: conversation.id, depth: 0 }).first();
    expect(greeting).toMatchObject({ role: "assistant", content: "Welcome aboard, cadet!" });
    expect(stored[0]!.parent_id).toBe(greeting.id);
    expect(completion.persona_message_id).toBe(stored[1]!.id);
    const events = await knex()("event_outbox").where({ type: "message.created" }).whereRaw("data->>'conversation_id' = ?", [conversation.id]);
    expect(events).toHaveLength(2);
  });

  it("stores a streamed exchange named by the X-Persona-Conversation-Id header", async () => {
    const conversation = await createConversation(service, alice, nova.id, "Header");
    const stream = await client(aliceKey).chat.completions.create(
      { model: nova.id, stream: true, messages: [{ role: "user", content: "Via header" }] },
      { headers: { "X-Persona-Conversation-Id": conversation.id } },
    );
    for await (const _ of stream);
    expect((await messagesOf(conversation.id)).map((m) => m.content)).toEqual(["Via header", "Echo: Via header"]);
  });

  it("answers 404 conversation_not_found for another user's conversation or another persona's, storing nothing", async () => {
    const bobsPersona = await createPersona(service, bob, { is_public: true });
    const bobs = await createConversation(service, bob, bobsPersona.id);
    const other = await createPersona(service, bob, { name: "Other", is_public: true });
    const otherConversation = await createConversation(service, alice, other.id);
    for (const [model, conversationId] of [[bobsPersona.id, bobs.id], [nova.id, otherConversation.id]] as const) {
      await expectOpenAIError(await post({ model, conversation_id: conversationId, messages: [{ role: "user", content: "x" }] }), 404, "conversation_not_found", "conversation_id");
    }
    expect(await messagesOf(bobs.id)).toHaveLength(0);
    expect(await messagesOf(otherConversation.id)).toHaveLength(0);
    expect(chatCalls()).toHaveLength(0);
  });
});
