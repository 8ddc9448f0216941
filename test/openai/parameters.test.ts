import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createConversation, createPersona } from "../support/chat.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { fakeUpstreamEnv } from "../support/openai-door.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";

// What an OpenAI client asks of the model reaches it (issue 35, items 2 to 4 and 6): the sampling
// parameters over the persona's defaults, structured output, tool calls, finish reasons, prefills
// and trailing instructions, through the official `openai` package against a fake upstream that
// records what it receives.
let fake: FakeOpenAI;
let service: TestService;
let alice: TestUser;
let aliceKey: string;
let nova: { id: string };

beforeAll(async () => {
  fake = await startFakeOpenAI();
  service = await startTestService({ env: fakeUpstreamEnv(fake) });
  alice = await registerUser(service);
  aliceKey = await apiKeyFor(service, alice, ["chat"]);
  nova = await createPersona(service, alice, { instructions: "You are Captain Nova.", greeting_message: "Welcome aboard, cadet!" });
});

beforeEach(() => fake.reset());

afterAll(async () => {
  await service?.close();
  await fake?.close();
});

const client = () => new OpenAI({ baseURL: `${service.url}/openai/v1`, apiKey: aliceKey, maxRetries: 0 });
const chatCalls = () => fake.requests.filter((request) => request.path === "/v1/chat/completions");
const upstreamBody = (index = 0) => chatCalls()[index]!.body as Record<string, unknown> & { messages: { role: string; content: string | null; tool_call_id?: string; tool_calls?: unknown[] }[] };
const used = async () => Number((await service.services.db.knex("usage_counters").where({ user_id: alice.id }).sum({ n: "messages_sent" }).first())?.n ?? 0);

async function expectRefusal(request: Promise<unknown>, status: number, code: string, param: string) {
  const error = await request.then(
    () => expect.fail("the request was answered"),
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(OpenAI.APIError);
  expect(error).toMatchObject({ status, code, param });
}

describe("sampling parameters", () => {
  it("reach the upstream as the client sent them", async () => {
    const sampling = {
      temperature: 0.2,
      top_p: 0.9,
      presence_penalty: 0.5,
      frequency_penalty: -0.5,
      stop: ["\nUser:", "###"],
      seed: 42,
      logit_bias: { "50256": -100 },
      user: "end-user-7",
    };
    await client().chat.completions.create({ model: nova.id, messages: [{ role: "user", content: "Hello" }], ...sampling, max_completion_tokens: 64 });
    // A compatible upstream gets the cap as max_tokens (OpenAI itself, max_completion_tokens).
    expect(upstreamBody()).toMatchObject({ ...sampling, max_tokens: 64 });
  });

  it("leave the upstream's own defaults alone when the client sends none", async () => {
    await client().chat.completions.create({ model: nova.id, messages: [{ role: "user", content: "Hello" }] });
    for (const name of ["temperature", "top_p", "stop", "seed", "presence_penalty", "frequency_penalty", "response_format", "tools"]) {
      expect(upstreamBody()).not.toHaveProperty(name);
    }
  });

  it("pass the upstream's finish reason on: a reply cut at max_tokens ends with length, blocking and streamed", async () => {
    fake.chat.always({ reply: "one two three four five six" });
    const whole = await client().chat.completions.create({ model: nova.id, messages: [{ role: "user", content: "Count" }], max_tokens: 3 });
    expect(whole.choices[0]).toMatchObject({ finish_reason: "length", message: { content: "one two three " } });
    const stream = await client().chat.completions.create({ model: nova.id, messages: [{ role: "user", content: "Count" }], max_tokens: 3, stream: true });
    const finishes: (string | null)[] = [];
    for await (const chunk of stream) finishes.push(...chunk.choices.map((choice) => choice.finish_reason));
    expect(finishes.filter(Boolean)).toEqual(["length"]);
  });

  it("send a string stop as a list of one", async () => {
    await client().chat.completions.create({ model: nova.id, messages: [{ role: "user", content: "Hello" }], stop: "END" });
    expect(upstreamBody().stop).toEqual(["END"]);
  });
});

describe("structured output", () => {
  it("passes json_object and json_schema to the upstream", async () => {
    fake.chat.next({ reply: '{"planet":"Venus"}' });
    const answer = await client().chat.completions.create({
      model: nova.id,
      messages: [{ role: "user", content: "Which planet?" }],
      response_format: { type: "json_schema", json_schema: { name: "answer", schema: { type: "object", properties: { planet: { type: "string" } }, required: ["planet"] }, strict: true } },
    });
    expect(JSON.parse(answer.choices[0]!.message.content!)).toEqual({ planet: "Venus" });
    expect(upstreamBody().response_format).toEqual({
      type: "json_schema",
      json_schema: { name: "answer", schema: { type: "object", properties: { planet: { type: "string" } }, required: ["planet"] }, strict: true },
    });
    await client().chat.completions.create({ model: nova.id, messages: [{ role: "user", content: "JSON please" }], response_format: { type: "json_object" } });
    expect(upstreamBody(1).response_format).toEqual({ type: "json_object" });
  });
});

describe("the persona's model settings", () => {
  it("are the defaults of every reply, under the client's own values", async () => {
    const tuned = await createPersona(service, alice, { name: "Tuned", model_settings: { temperature: 0.3, stop: ["END"], seed: 7 } });
    await client().chat.completions.create({ model: tuned.id, messages: [{ role: "user", content: "Hello" }] });
    expect(upstreamBody()).toMatchObject({ temperature: 0.3, stop: ["END"], seed: 7 });
    await client().chat.completions.create({ model: tuned.id, messages: [{ role: "user", content: "Hello" }], temperature: 1.1 });
    expect(upstreamBody(1)).toMatchObject({ temperature: 1.1, stop: ["END"], seed: 7 });
  });

  it("apply to the persona's replies in the app too", async () => {
    const owner = await registerUser(service);
    const tuned = await createPersona(service, owner, { name: "Tuned in app", model_settings: { temperature: 0.25, top_p: 0.5, max_tokens: 40 } });
    // Titled, so that no title job asks the model during a later test.
    const conversation = await createConversation(service, owner, tuned.id, "Settings");
    const sent = await service.clientFor(owner).POST("/v1/conversations/{id}/messages", { params: { path: { id: conversation.id } }, body: { content: "Hello" } });
    expect(sent.response.status).toBe(201);
    expect(upstreamBody()).toMatchObject({ temperature: 0.25, top_p: 0.5, max_tokens: 40 });
  });

  it("refuse what the owner keeps for the persona with 400 parameter_not_allowed, asking no model and using no quota", async () => {
    const locked = await createPersona(service, alice, { name: "Locked", model_settings: { temperature: 0.3, client_may_set: ["max_tokens"] } });
    const before = await used();
    await expectRefusal(client().chat.completions.create({ model: locked.id, messages: [{ role: "user", content: "Hi" }], temperature: 1 }), 400, "parameter_not_allowed", "temperature");
    await expectRefusal(
      client().chat.completions.create({ model: locked.id, messages: [{ role: "user", content: "Hi" }], tools: [{ type: "function", function: { name: "f" } }] }),
      400,
      "parameter_not_allowed",
      "tools",
    );
    // (A title job of an earlier test's conversation may still ask the model: count replies to "Hi".)
    const replies = () => chatCalls().filter((call) => (call.body as { messages: { content: string }[] }).messages.at(-1)?.content === "Hi");
    expect(replies()).toHaveLength(0);
    expect(await used()).toBe(before);
    await client().chat.completions.create({ model: locked.id, messages: [{ role: "user", content: "Hi" }], max_tokens: 20 });
    expect(replies()[0]!.body).toMatchObject({ temperature: 0.3, max_tokens: 20 });
  });

  it("are the owner's: another user sees {} in the persona", async () => {
    const [owner, bob] = await Promise.all([registerUser(service), registerUser(service)]);
    const shared = await createPersona(service, owner, { name: "Shared", is_public: true, model_settings: { temperature: 0.4 } });
    const own = await service.clientFor(owner).GET("/v1/personas/{id}", { params: { path: { id: shared.id } } });
    expect(own.data?.model_settings).toEqual({ temperature: 0.4 });
    const other = await service.clientFor(bob).GET("/v1/personas/{id}", { params: { path: { id: shared.id } } });
    expect(other.data?.model_settings).toEqual({});
  });
});

describe("tools", () => {
  const tools: OpenAI.ChatCompletionTool[] = [
    { type: "function", function: { name: "star_position", description: "Where a star is now", parameters: { type: "object", properties: { star: { type: "string" } } } } },
  ];
  const call = { id: "call_1", name: "star_position", arguments: '{"star":"Vega"}' };

  it("pass through: the upstream gets tools and tool_choice, the client gets the calls with finish_reason tool_calls", async () => {
    fake.chat.next({ reply: "", toolCalls: [call] });
    const answer = await client().chat.completions.create({ model: nova.id, messages: [{ role: "user", content: "Where is Vega?" }], tools, tool_choice: "auto" });
    expect(upstreamBody()).toMatchObject({ tools, tool_choice: "auto" });
    expect(answer.choices[0]).toMatchObject({
      finish_reason: "tool_calls",
      message: { content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "star_position", arguments: '{"star":"Vega"}' } }] },
    });
  });

  it("stream as tool-call deltas that the openai package puts together", async () => {
    fake.chat.next({ reply: "", toolCalls: [call] });
    const stream = client().chat.completions.stream({ model: nova.id, messages: [{ role: "user", content: "Where is Vega?" }], tools });
    const final = await stream.finalChatCompletion();
    expect(final.choices[0]).toMatchObject({ finish_reason: "tool_calls", message: { tool_calls: [{ id: "call_1", function: { name: "star_position", arguments: '{"star":"Vega"}' } }] } });
  });

  it("take the tool's result in the history and answer it", async () => {
    fake.chat.next({ reply: "Vega is high in the east." });
    const answer = await client().chat.completions.create({
      model: nova.id,
      tools,
      messages: [
        { role: "user", content: "Where is Vega?" },
        { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "star_position", arguments: '{"star":"Vega"}' } }] },
        { role: "tool", tool_call_id: "call_1", content: '{"altitude":61,"azimuth":"E"}' },
      ],
    });
    expect(answer.choices[0]!.message.content).toBe("Vega is high in the east.");
    const sent = upstreamBody().messages;
    expect(sent.slice(-3)).toEqual([
      { role: "user", content: "Where is Vega?" },
      { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "star_position", arguments: '{"star":"Vega"}' } }] },
      { role: "tool", content: '{"altitude":61,"azimuth":"E"}', tool_call_id: "call_1" },
    ]);
  });

  it("are refused beside conversation_id (tool calls are not stored in a conversation)", async () => {
    const conversation = await createConversation(service, alice, nova.id);
    await expectRefusal(
      client().chat.completions.create({ model: nova.id, messages: [{ role: "user", content: "Hi" }], tools, conversation_id: conversation.id } as OpenAI.ChatCompletionCreateParamsNonStreaming),
      400,
      "unsupported",
      "tools",
    );
  });
});

describe("what the last message asks for", () => {
  it("continues a last assistant message (a prefill): it is the context's last turn and the reply holds the continuation only", async () => {
    fake.chat.next({ reply: " the brightest star in Lyra." });
    const answer = await client().chat.completions.create({
      model: nova.id,
      messages: [
        { role: "user", content: "Tell me about Vega." },
        { role: "assistant", content: "Vega is" },
      ],
    });
    expect(answer.choices[0]!.message.content).toBe(" the brightest star in Lyra.");
    expect(upstreamBody().messages.at(-1)).toEqual({ role: "assistant", content: "Vega is" });
    expect(upstreamBody().messages.at(-2)).toEqual({ role: "user", content: "Tell me about Vega." });
  });

  it("keeps a closing system instruction after the user's message (SillyTavern's Impersonate)", async () => {
    await client().chat.completions.create({
      model: nova.id,
      messages: [
        { role: "user", content: "Hello" },
        { role: "assistant", content: "Welcome aboard!" },
        { role: "system", content: "Write the user's next reply." },
      ],
    });
    const sent = upstreamBody().messages;
    expect(sent.at(-1)).toEqual({ role: "system", content: "Write the user's next reply." });
    expect(sent.at(-2)).toEqual({ role: "assistant", content: "Welcome aboard!" });
    // The persona's instructions are still first.
    expect(sent[0]).toMatchObject({ role: "system", content: expect.stringContaining("You are Captain Nova.") });
  });

  it("refuses a prefill beside conversation_id: there is no new user message to store", async () => {
    const conversation = await createConversation(service, alice, nova.id);
    await expectRefusal(
      client().chat.completions.create({
        model: nova.id,
        messages: [{ role: "user", content: "Hi" }, { role: "assistant", content: "Well" }],
        conversation_id: conversation.id,
      } as OpenAI.ChatCompletionCreateParamsNonStreaming),
      400,
      "unsupported",
      "conversation_id",
    );
  });
});

describe("readable model names", () => {
  it("take the persona's handle, and `<username>/<handle>` for another user's public persona", async () => {
    const [carol, bob] = await Promise.all([registerUser(service), registerUser(service)]);
    const [carolKey, bobKey] = await Promise.all([apiKeyFor(service, carol, ["chat"]), apiKeyFor(service, bob, ["chat"])]);
    const quill = await createPersona(service, carol, { name: "Professor Quill", is_public: true, handle: "quill" });
    const asCarol = new OpenAI({ baseURL: `${service.url}/openai/v1`, apiKey: carolKey, maxRetries: 0 });
    await asCarol.chat.completions.create({ model: "quill", messages: [{ role: "user", content: "Hello" }] });
    expect(upstreamBody().messages[0]).toMatchObject({ role: "system" });
    const asBob = new OpenAI({ baseURL: `${service.url}/openai/v1`, apiKey: bobKey, maxRetries: 0 });
    const answer = await asBob.chat.completions.create({ model: `${carol.username}/quill`, messages: [{ role: "user", content: "Hello" }] });
    expect(answer.model).toBe(`${carol.username}/quill`);
    // Bob's own namespace has no "quill".
    await expectRefusal(asBob.chat.completions.create({ model: "quill", messages: [{ role: "user", content: "Hello" }] }), 404, "model_not_found", "model");
    expect(quill.id).toBeTruthy();
  });

  it("are unique per owner: a taken handle is 409, a name's handle gets the next free number", async () => {
    const owner = await registerUser(service);
    const first = await service.clientFor(owner).POST("/v1/personas", { body: { name: "Twin", instructions: "You are Twin." } });
    const second = await service.clientFor(owner).POST("/v1/personas", { body: { name: "Twin", instructions: "You are Twin." } });
    expect([first.data?.handle, second.data?.handle]).toEqual(["twin", "twin-2"]);
    const taken = await service.clientFor(owner).PUT("/v1/personas/{id}", { params: { path: { id: second.data!.id } }, body: { handle: "twin" } });
    expect(taken.response.status).toBe(409);
    const renamed = await service.clientFor(owner).PUT("/v1/personas/{id}", { params: { path: { id: second.data!.id } }, body: { handle: "twin-b", name: "Other" } });
    expect(renamed.data).toMatchObject({ handle: "twin-b", name: "Other" });
    // Another owner may use the same handle.
    const other = await service.clientFor(await registerUser(service)).POST("/v1/personas", { body: { name: "Twin", instructions: "You are Twin.", handle: "twin" } });
    expect(other.data?.handle).toBe("twin");
  });
});

describe("the offline model", () => {
  let offline: TestService;
  let key: string;
  let persona: { id: string };
  beforeAll(async () => {
    offline = await startTestService();
    const user = await registerUser(offline);
    key = await apiKeyFor(offline, user, ["chat"]);
    persona = await createPersona(offline, user, { instructions: "You are Captain Nova." });
  });
  afterAll(() => offline?.close());
  const local = () => new OpenAI({ baseURL: `${offline.url}/openai/v1`, apiKey: key, maxRetries: 0 });
  const ask = (params: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming>) =>
    local().chat.completions.create({ model: persona.id, messages: [{ role: "user", content: "Which planet is the bright one?" }], ...params });

  it("honours max_tokens (finish_reason length) and stop sequences", async () => {
    const cut = await ask({ max_tokens: 3 });
    expect(cut.choices[0]!.finish_reason).toBe("length");
    const whole = await ask({});
    expect(whole.choices[0]!.finish_reason).toBe("stop");
    const stopped = await ask({ stop: ["said"] });
    expect(stopped.choices[0]!.message.content).toBe(whole.choices[0]!.message.content!.slice(0, whole.choices[0]!.message.content!.indexOf("said")));
  });

  it("answers the same for the same seed", async () => {
    expect((await ask({ seed: 3 })).choices[0]!.message.content).toBe((await ask({ seed: 3 })).choices[0]!.message.content);
  });

  it("answers JSON for json_object, and a value of the schema's shape for json_schema", async () => {
    expect(JSON.parse((await ask({ response_format: { type: "json_object" } })).choices[0]!.message.content!)).toEqual({ reply: expect.any(String) });
    const shaped = await ask({
      response_format: {
        type: "json_schema",
        json_schema: { name: "a", schema: { type: "object", properties: { planet: { type: "string" }, confidence: { type: "number" }, moons: { type: "array", items: { type: "string" } } }, required: ["planet"] } },
      },
    });
    expect(JSON.parse(shaped.choices[0]!.message.content!)).toEqual({ planet: expect.any(String), confidence: 0, moons: [] });
  });

  it("refuses tools with 400 unsupported, asking nothing", async () => {
    await expectRefusal(ask({ tools: [{ type: "function", function: { name: "f" } }] }), 400, "unsupported", "tools");
  });

  it("continues a prefill", async () => {
    const answer = await local().chat.completions.create({ model: persona.id, messages: [{ role: "user", content: "Tell me a story" }, { role: "assistant", content: "Once upon a time" }] });
    expect(answer.choices[0]!.message.content).toMatch(/^ …and that is where Captain Nova goes on/);
  });
});
