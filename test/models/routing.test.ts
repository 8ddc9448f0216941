import { describe, expect, it } from "vitest";
import { createConversation, createPersona, sendBlocking, sendStream } from "../support/chat.ts";
import { contentOf, readIdEvents } from "../support/generations.ts";
import { expectOpenAIError } from "../support/openai-door.ts";
import { databaseKind } from "../support/service.ts";
import { apiKeyFor, type TestUser } from "../support/users.ts";
import { callBody, chatCalls, expectedCost, KEYS, quotaUsed, storedReply, type ModelsWorld, useModelsWorld } from "./support.ts";

// Issue 40: a registry of models on two upstreams. Each persona replies through its model's
// upstream, under the upstream's name for it, with its key, its budget and the persona's settings;
// a model that fails before answering hands the reply to its fallback, which the reply records.
let world: ModelsWorld;
let alice: TestUser;
let bob: TestUser;

useModelsWorld(2, (started, [a, b]) => {
  [world, alice, bob] = [started, a!, b!];
});

const api = (user: TestUser) => world.service.clientFor(user);
/** A blocking completion's body (the operation also declares the streamed one). */
type Completion = { usage: { prompt_tokens: number; completion_tokens: number; cost_usd?: number } };

describe(`the model registry (${databaseKind})`, () => {
  it("lists the models a persona may use with their windows, prices and capabilities, never where they are reached", async () => {
    const { data, response } = await api(alice).GET("/v1/models");
    expect(response.status).toBe(200);
    expect(data!.data.map((model) => model.id)).toEqual(["beta", "alpha", "gamma"]);
    expect(data!.data[1]).toEqual({
      id: "alpha",
      default: false,
      context_window: 4096,
      max_output_tokens: 256,
      input_price_per_million: 1,
      output_price_per_million: 2,
      capabilities: { streaming: true, tools: true, json_mode: true, vision: false },
      tokenizer: "approximate",
      fallbacks: ["beta"],
    });
    expect(data!.data[0]).toMatchObject({ id: "beta", default: true });
    const text = JSON.stringify(data);
    for (const secret of [KEYS.alpha, KEYS.beta, world.first.baseUrl, world.second.baseUrl, "alpha-upstream"]) expect(text).not.toContain(secret);
    expect((await world.service.fetch("/v1/models")).status).toBe(401);
  });

  it("gives a new persona the default model and refuses one the registry lacks", async () => {
    const plain = await createPersona(world.service, alice);
    expect(plain.model).toBe("beta");
    const unknown = await api(alice).POST("/v1/personas", { body: { name: "X", instructions: "x", model: "gpt-9" } });
    expect(unknown.response.status).toBe(400);
    expect((unknown.error as { error: { message: string } }).error.message).toBe("/body/model must be one of: beta, alpha, gamma");
    const changed = await api(alice).PUT("/v1/personas/{id}", { params: { path: { id: plain.id } }, body: { model: "gpt-9" } });
    expect(changed.response.status).toBe(400);
  });

  it("applies settings within the model's limits: a reply cap above the model's output is its output", async () => {
    const greedy = await createPersona(world.service, alice, { name: "Greedy", model: "beta", model_settings: { max_tokens: 400 } });
    const conversation = await createConversation(world.service, alice, greedy.id, "greedy");
    await sendBlocking(world.service, alice, conversation.id, "Hi");
    expect(callBody(world.second)).toMatchObject({ max_tokens: 400 });
    // Moved to a model of less output: the same settings, capped to it.
    await api(alice).PUT("/v1/personas/{id}", { params: { path: { id: greedy.id } }, body: { model: "alpha" } });
    await sendBlocking(world.service, alice, conversation.id, "Again");
    expect(callBody(world.first)).toMatchObject({ model: "alpha-upstream", max_tokens: 256 });
  });

  it("replies to each persona through its model's upstream, with its key, its name there, its output and the persona's settings", async () => {
    const dear = await createPersona(world.service, alice, { name: "Dear", model: "alpha", model_settings: { temperature: 0.3, seed: 7 } });
    const cheap = await createPersona(world.service, alice, { name: "Cheap", model: "beta", model_settings: { temperature: 0.9, stop: ["###"] } });
    for (const [persona, fake, upstream, key, most, settings] of [
      [dear, world.first, "alpha-upstream", KEYS.alpha, 256, { temperature: 0.3, seed: 7 }],
      [cheap, world.second, "beta-upstream", KEYS.beta, 512, { temperature: 0.9, stop: ["###"] }],
    ] as const) {
      const conversation = await createConversation(world.service, alice, persona.id, `on ${upstream}`);
      const answer = await sendBlocking(world.service, alice, conversation.id, "Hello there");
      expect(answer.status).toBe(201);
      const { assistant_message: reply } = await answer.json();
      expect(chatCalls(fake)).toHaveLength(1);
      expect(callBody(fake)).toMatchObject({ model: upstream, max_tokens: most, ...settings });
      expect(chatCalls(fake)[0]!.headers.authorization).toBe(`Bearer ${key}`);
      const stored = await storedReply(world.service, reply.id);
      expect(stored).toMatchObject({ model: upstream, model_id: persona === dear ? "alpha" : "beta", fallback_from: null, own_key: false });
      expect(Number(stored.cost_nanos)).toBe(expectedCost(persona === dear ? "alpha" : "beta", stored));
      expect(Number(stored.cost_nanos)).toBeGreaterThan(0);
    }
  });

  it("fits the context to each model's budget: the small window cuts long instructions, the large one keeps them", async () => {
    const instructions = `You are Chatty. ${"Remember every star and planet you have ever seen. ".repeat(250)}`.trim();
    const small = await createPersona(world.service, alice, { name: "Small", model: "alpha", instructions });
    const large = await createPersona(world.service, alice, { name: "Large", model: "beta", instructions });
    for (const persona of [small, large]) {
      const conversation = await createConversation(world.service, alice, persona.id, "budget");
      expect((await sendBlocking(world.service, alice, conversation.id, "Hi")).status).toBe(201);
    }
    const cut = callBody(world.first).messages[0]!.content;
    const whole = callBody(world.second).messages[0]!.content;
    expect(whole).toBe(instructions);
    expect(cut.length).toBeGreaterThan(0);
    expect(cut.length).toBeLessThan(instructions.length * 0.8);
    expect(instructions.startsWith(cut)).toBe(true);
  });

  it("refuses a message over the persona's model's limit, naming the model, and reserves nothing", async () => {
    const small = await createPersona(world.service, bob, { name: "Tiny window", model: "alpha" });
    const conversation = await createConversation(world.service, bob, small.id, "too long");
    const before = await quotaUsed(world.service, bob);
    const answer = await sendBlocking(world.service, bob, conversation.id, "star ".repeat(2500));
    expect(answer.status).toBe(400);
    expect((await answer.json()).error.message).toMatch(/over the limit of [\d,]+ tokens a message may have with the model `alpha`/);
    expect(chatCalls(world.first)).toHaveLength(0);
    expect(await quotaUsed(world.service, bob)).toBe(before);
  });
});

describe(`fallbacks (${databaseKind})`, () => {
  it("hands a reply the model failed before answering (5xx, 429) to its fallback, recorded on the reply and priced as the fallback's", async () => {
    const dear = await createPersona(world.service, alice, { name: "Falls back", model: "alpha" });
    for (const status of [503, 429]) {
      world.first.chat.next({ status });
      const conversation = await createConversation(world.service, alice, dear.id, `fallback ${status}`);
      const answer = await sendBlocking(world.service, alice, conversation.id, "Are you there?");
      expect(answer.status).toBe(201);
      const { assistant_message: reply } = await answer.json();
      expect(reply.content).toBe("Echo: Are you there?");
      const stored = await storedReply(world.service, reply.id);
      expect(stored).toMatchObject({ model: "beta-upstream", model_id: "beta", fallback_from: "alpha" });
      expect(Number(stored.cost_nanos)).toBe(expectedCost("beta", stored));
      // The fallback is asked under its own name, capped to the persona's model's output.
      expect(callBody(world.second)).toMatchObject({ model: "beta-upstream", max_tokens: 256 });
      expect(chatCalls(world.second)[0]!.headers.authorization).toBe(`Bearer ${KEYS.beta}`);
      world.first.reset();
      world.second.reset();
    }
  });

  it("falls back for a streamed reply that fails before its first token, and not once it has answered", async () => {
    const dear = await createPersona(world.service, alice, { name: "Streams", model: "alpha" });
    const conversation = await createConversation(world.service, alice, dear.id, "streamed fallback");
    world.first.chat.next({ status: 500 });
    world.second.chat.next({ chunks: ["from", " the", " fallback"] });
    const events = await readIdEvents(await sendStream(world.service, alice, conversation.id, "go"));
    expect(events.at(-1)!.event).toBe("done");
    expect(contentOf(events)).toBe("from the fallback");
    const { message_id: replyId } = JSON.parse(events.at(-1)!.data) as { message_id: string };
    expect(await storedReply(world.service, replyId)).toMatchObject({ model_id: "beta", fallback_from: "alpha" });

    // Broken after its first chunk: the reply fails, and no fallback is asked.
    world.first.reset();
    world.second.reset();
    world.first.chat.next({ chunks: ["half", " a", " reply"], failAfterChunks: 1 });
    const broken = await readIdEvents(await sendStream(world.service, alice, conversation.id, "again"));
    expect(broken.at(-1)!.event).toBe("error");
    expect(chatCalls(world.second)).toHaveLength(0);
  });

  it("does not fall back on a refusal (4xx), and when every model fails the error names them, not the upstreams' words", async () => {
    const dear = await createPersona(world.service, alice, { name: "Fails", model: "alpha" });
    const conversation = await createConversation(world.service, alice, dear.id, "all fail");
    const before = await quotaUsed(world.service, alice);

    world.first.chat.next({ status: 400, errorBody: { error: { message: "upstream secret detail sk-leak", type: "invalid_request_error", code: "bad_thing" } } });
    const refused = await sendBlocking(world.service, alice, conversation.id, "one");
    expect(refused.status).toBe(502);
    const refusal = (await refused.json()).error;
    expect(refusal.code).toBe("upstream_error");
    expect(refusal.message).toBe("The model `alpha` answered 400 (bad_thing)");
    expect(chatCalls(world.second)).toHaveLength(0);

    world.first.chat.next({ status: 503 });
    world.second.chat.next({ status: 502 });
    const failed = await sendBlocking(world.service, alice, conversation.id, "two");
    expect(failed.status).toBe(502);
    const error = (await failed.json()).error;
    expect(error.message).toBe("The model `alpha` and its fallback `beta` failed before answering: The model `alpha` answered 503 (server_error); The model `beta` answered 502 (server_error)");
    expect(error.message).not.toContain("Fake upstream error");
    // Nothing stored, the quota given back.
    expect(await quotaUsed(world.service, alice)).toBe(before);
    const messages = await world.service.services.db.knex("messages").where({ conversation_id: conversation.id, role: "user" });
    expect(messages).toHaveLength(0);
  });
});

describe(`the OpenAI-compatible door on the registry (${databaseKind})`, () => {
  it("reports each reply's cost in its usage, blocking and streamed, and the persona's model's window in the model list", async () => {
    const key = await apiKeyFor(world.service, alice, ["chat"]);
    const dear = await createPersona(world.service, alice, { name: "Door Dear", model: "alpha" });
    const client = world.service.clientFor({ auth: { authorization: `Bearer ${key}` } });
    const blocking = await client.POST("/openai/v1/chat/completions", { body: { model: "door-dear", messages: [{ role: "user", content: "Hello" }] } });
    expect(blocking.response.status).toBe(200);
    const { usage } = blocking.data as Completion;
    expect(usage.cost_usd).toBeCloseTo(expectedCost("alpha", { input_tokens: usage.prompt_tokens, output_tokens: usage.completion_tokens }) / 1e9, 12);
    expect(callBody(world.first)).toMatchObject({ model: "alpha-upstream", max_tokens: 256 });

    const streamed = await world.service.fetch("/openai/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: `{"model":"door-dear","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hi"}]}`,
    });
    const chunks = (await streamed.text()).split("\n\n").filter((line) => line.startsWith("data: {")).map((line) => JSON.parse(line.slice(6)));
    const last = chunks.at(-1)!;
    expect(last.usage.cost_usd).toBeCloseTo(expectedCost("alpha", { input_tokens: last.usage.prompt_tokens, output_tokens: last.usage.completion_tokens }) / 1e9, 12);

    const models = await client.GET("/openai/v1/models");
    expect(models.data!.data.find((model) => model.persona_id === dear.id)).toMatchObject({ id: "door-dear", context_length: 4096 });
  });

  it("refuses tools and JSON replies of a model that cannot give them, before anything is reserved", async () => {
    const key = await apiKeyFor(world.service, bob, ["chat"]);
    await createPersona(world.service, bob, { name: "Plain Gamma", model: "gamma" });
    const before = await quotaUsed(world.service, bob);
    const client = world.service.clientFor({ auth: { authorization: `Bearer ${key}` } });
    const tools = await client.POST("/openai/v1/chat/completions", {
      body: { model: "plain-gamma", messages: [{ role: "user", content: "Weather?" }], tools: [{ type: "function", function: { name: "weather" } }] },
    });
    const error = await expectOpenAIError(tools, 400, "unsupported", "tools");
    expect(error.message).toBe("The persona's model `gamma` cannot call tools");
    const json = await client.POST("/openai/v1/chat/completions", { body: { model: "plain-gamma", messages: [{ role: "user", content: "JSON" }], response_format: { type: "json_object" } } });
    await expectOpenAIError(json, 400, "unsupported", "response_format");
    expect(chatCalls(world.second)).toHaveLength(0);
    expect(await quotaUsed(world.service, bob)).toBe(before);
  });
});
