import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createPersona } from "../support/chat.ts";
import { contract } from "../support/contract.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { sendRaw } from "../support/raw.ts";
import { schemaErrors } from "../support/schema.ts";
import { parseSse } from "../support/sse.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { expectOpenAIError, fakeUpstreamEnv } from "../support/openai-door.ts";
import type { RequestBody } from "../../sdk/src/types.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";

// POST /openai/v1/responses, OpenAI's Responses API, driven by the official `openai` package (and
// raw requests for the wire and the refusals): once against a fake OpenAI-compatible upstream that
// records what reaches the model, once against the offline model.
let fake: FakeOpenAI;
let service: TestService;
let offline: TestService;
let alice: TestUser;
let aliceKey: string;
let nova: { id: string };

beforeAll(async () => {
  fake = await startFakeOpenAI();
  [service, offline] = await Promise.all([
    startTestService({ env: { ...fakeUpstreamEnv(fake) } }),
    startTestService(),
  ]);
  alice = await registerUser(service);
  aliceKey = await apiKeyFor(service, alice, ["chat"]);
  nova = await createPersona(service, alice, { instructions: "You are Captain Nova.", greeting_message: "Welcome aboard, cadet!" });
});

beforeEach(() => fake.reset());

afterAll(async () => {
  await Promise.all([service?.close(), offline?.close()]);
  await fake?.close();
});

const knex = () => service.services.db.knex;
const chatCalls = () => fake.requests.filter((request) => request.path === "/v1/chat/completions");
const upstreamBody = (index = 0) => chatCalls()[index]!.body as { messages: { role: string; content: string }[] } & Record<string, unknown>;
const used = async (user: TestUser) => Number((await knex()("usage_counters").where({ user_id: user.id }).sum({ n: "messages_sent" }).first())?.n ?? 0);
const client = (apiKey: string, on: TestService = service) => new OpenAI({ baseURL: `${on.url}/openai/v1`, apiKey, maxRetries: 0 });
const post = (body: RequestBody<"openai_responses_create">, headers: Record<string, string> = { authorization: `Bearer ${aliceKey}` }) =>
  service.clientFor({ auth: headers }).POST("/openai/v1/responses", { body });
/** A body the contract refuses on purpose, or one it cannot type. */
const postRaw = (body: unknown, headers: Record<string, string> = alice.auth) => sendRaw(service, "POST", "/openai/v1/responses", { body, headers });

/** The events of a streamed response on the wire, each checked against the contract. */
async function streamedEvents(body: Record<string, unknown>, on: TestService = service, auth: Record<string, string> = { authorization: `Bearer ${aliceKey}` }) {
  const response = await sendRaw(on, "POST", "/openai/v1/responses", { body: { ...body, stream: true }, headers: auth });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
  const events = parseSse(await response.text()).events;
  const schema = contract.components.schemas.OpenAIResponsesStreamEvent!;
  return events.map(({ event, data }) => {
    const parsed = JSON.parse(data) as { type: string; sequence_number: number } & Record<string, unknown>;
    expect(schemaErrors(schema, parsed), data).toEqual([]);
    expect(event).toBe(parsed.type);
    return parsed;
  });
}

describe("a blocking response", () => {
  it("answers as the persona through the openai package: instructions, greeting, the input, settings echoed", async () => {
    fake.chat.next({ reply: "That is Venus, cadet." });
    const response = await client(aliceKey).responses.create({
      model: nova.id,
      instructions: "Answer in one sentence.",
      input: "Which planet is that?",
      temperature: 0.3,
      top_p: 0.9,
      max_output_tokens: 50,
      metadata: { ticket: "42" },
      store: true,
    });
    expect(response).toMatchObject({
      object: "response",
      id: expect.stringMatching(/^resp_[0-9a-f]{32}$/),
      status: "completed",
      model: nova.id,
      error: null,
      incomplete_details: null,
      instructions: "Answer in one sentence.",
      max_output_tokens: 50,
      temperature: 0.3,
      top_p: 0.9,
      metadata: { ticket: "42" },
      tools: [],
      text: { format: { type: "text" } },
      store: false,
      previous_response_id: null,
    });
    expect(response.output_text).toBe("That is Venus, cadet.");
    expect(response.output).toEqual([
      {
        type: "message",
        id: expect.stringMatching(/^msg_[0-9a-f]{32}$/),
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text: "That is Venus, cadet.", annotations: [], logprobs: [] }],
      },
    ]);
    const usage = response.usage!;
    expect(usage.input_tokens).toBeGreaterThan(0);
    expect(usage.total_tokens).toBe(usage.input_tokens + usage.output_tokens);
    expect(usage.input_tokens_details).toEqual({ cached_tokens: 0 });
    expect(usage.output_tokens_details).toEqual({ reasoning_tokens: 0 });
    expect(upstreamBody().messages).toEqual([
      { role: "system", content: "You are Captain Nova." },
      { role: "system", content: "Answer in one sentence." },
      { role: "assistant", content: "Welcome aboard, cadet!" },
      { role: "user", content: "Which planet is that?" },
    ]);
    const sent = upstreamBody();
    expect(sent).toMatchObject({ temperature: 0.3, top_p: 0.9 });
    expect(sent.max_tokens ?? sent.max_completion_tokens).toBe(50);
  });

  it("reads a list of message items: roles, input_text and output_text parts, and a client's own opening", async () => {
    await client(aliceKey).responses.create({
      model: nova.id,
      input: [
        { role: "developer", content: "Be brief." },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "Greetings from the client." }] },
        { role: "user", content: [{ type: "input_text", text: "Which planet" }, { type: "input_text", text: "is that?" }] },
      ],
    } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    expect(upstreamBody().messages).toEqual([
      { role: "system", content: "You are Captain Nova." },
      { role: "system", content: "Be brief." },
      { role: "assistant", content: "Greetings from the client." },
      { role: "user", content: "Which planet\nis that?" },
    ]);
  });

  it("takes an earlier response's output back as input, as clients chain turns without stored state", async () => {
    const first = await client(aliceKey).responses.create({ model: nova.id, input: "Hello!" });
    await client(aliceKey).responses.create({
      model: nova.id,
      input: [{ role: "user", content: "Hello!" }, ...(first.output as OpenAI.Responses.ResponseOutputMessage[]), { role: "user", content: "And now?" }],
    });
    expect(upstreamBody(1).messages.slice(-3)).toEqual([
      { role: "user", content: "Hello!" },
      { role: "assistant", content: "Echo: Hello!" },
      { role: "user", content: "And now?" },
    ]);
  });

  it("answers a provider failure as OpenAI's 502 and gives the quota back", async () => {
    const carol = await registerUser(service);
    const own = await createPersona(service, carol);
    fake.chat.next({ status: 500 });
    await expectOpenAIError(await post({ model: own.id, input: "Hi" }, carol.auth), 502, "upstream_error", null);
    expect(await used(carol)).toBe(0);
  });
});

describe("a streamed response", () => {
  it("streams OpenAI's events through the openai package, ending with the whole response", async () => {
    fake.chat.next({ chunks: ["That ", "is ", "Venus."] });
    const stream = await client(aliceKey).responses.create({ model: nova.id, input: "Which planet?", stream: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    expect(events.map((event) => event.type)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    const deltas = events.filter((event): event is OpenAI.Responses.ResponseTextDeltaEvent => event.type === "response.output_text.delta");
    expect(deltas.map((event) => event.delta).join("")).toBe("That is Venus.");
    const completed = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    expect(completed.response).toMatchObject({ status: "completed", model: nova.id, usage: { output_tokens: expect.any(Number) } });
    expect(completed.response.output[0]).toMatchObject({ type: "message", status: "completed", content: [{ type: "output_text", text: "That is Venus." }] });
    const created = events[0] as OpenAI.Responses.ResponseCreatedEvent;
    expect(created.response).toMatchObject({ id: completed.response.id, status: "in_progress", output: [] });
    expect(deltas.every((event) => event.item_id === completed.response.output[0]!.id)).toBe(true);
  });

  it("satisfies the openai package's stream helper, which checks every event against the response it builds", async () => {
    fake.chat.next({ chunks: ["Ve", "nus", ", cadet."] });
    const stream = client(aliceKey).responses.stream({ model: nova.id, instructions: "Be brief.", input: "Which planet?" });
    const deltas: string[] = [];
    stream.on("response.output_text.delta", (event) => deltas.push(event.delta));
    const final = await stream.finalResponse();
    expect(final.output_text).toBe("Venus, cadet.");
    expect(deltas.join("")).toBe("Venus, cadet.");
  });

  it("names each event as its type on the wire, each conforming to the contract", async () => {
    const events = await streamedEvents({ model: nova.id, input: "Hi there" });
    expect(events.at(-1)!.type).toBe("response.completed");
    const text = events.filter((event) => event.type === "response.output_text.done")[0]!.text;
    expect(text).toBe("Echo: Hi there");
  });

  it("reports a provider failure after the start as an error event that the SDK raises, then response.failed", async () => {
    fake.chat.next({ chunks: ["one ", "two ", "three"], failAfterChunks: 1, failWith: "error-event" });
    const stream = await client(aliceKey).responses.create({ model: nova.id, input: "Count", stream: true });
    const read = async () => {
      for await (const _ of stream);
    };
    await expect(read()).rejects.toBeInstanceOf(OpenAI.APIError);

    fake.chat.next({ chunks: ["one ", "two ", "three"], failAfterChunks: 1, failWith: "error-event" });
    const events = await streamedEvents({ model: nova.id, input: "Count" });
    const [error, failed] = events.slice(-2);
    expect(error).toMatchObject({ type: "error", code: "upstream_error", message: expect.any(String) });
    expect(failed).toMatchObject({ type: "response.failed", response: { status: "failed", error: { code: "upstream_error" } } });
    expect(events.some((event) => event.type === "response.completed")).toBe(false);
  });
});

describe("the offline model", () => {
  let erin: TestUser;
  let own: { id: string };
  beforeAll(async () => {
    erin = await registerUser(offline);
    own = await createPersona(offline, erin, { name: "Offline Nova" });
  });

  it("answers a blocking and a streamed response", async () => {
    const whole = await client(erin.accessToken, offline).responses.create({ model: own.id, input: "Tell me about the stars" });
    expect(whole.status).toBe("completed");
    expect(whole.output_text.length).toBeGreaterThan(0);
    const events = await streamedEvents({ model: own.id, input: "Tell me about the stars" }, offline, erin.auth);
    expect(events.at(-1)).toMatchObject({ type: "response.completed", response: { status: "completed" } });
  });

  it("says incomplete, with the reason, when the reply reached max_output_tokens", async () => {
    const input = "Tell me a long story about the stars, the planets and the ships between them";
    const whole = await client(erin.accessToken, offline).responses.create({ model: own.id, input, max_output_tokens: 2 });
    expect(whole).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" }, output: [{ status: "incomplete" }] });
    const events = await streamedEvents({ model: own.id, input, max_output_tokens: 2 }, offline, erin.auth);
    expect(events.at(-1)).toMatchObject({ type: "response.incomplete", response: { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } } });
  });

  it("answers a JSON object for text.format json_object", async () => {
    const response = await client(erin.accessToken, offline).responses.create({ model: own.id, input: "Describe Venus as JSON", text: { format: { type: "json_object" } } });
    expect(response.text).toEqual({ format: { type: "json_object" } });
    expect(typeof JSON.parse(response.output_text)).toBe("object");
  });
});

describe("refusals", () => {
  const cases: [string, Record<string, unknown>, string, string][] = [
    ["previous_response_id", { input: "x", previous_response_id: "resp_0193" }, "unsupported", "previous_response_id"],
    ["a conversation", { input: "x", conversation: "conv_1" }, "unsupported", "conversation"],
    ["background", { input: "x", background: true }, "unsupported", "background"],
    ["a function_call_output item", { input: [{ role: "user", content: "x" }, { type: "function_call_output", call_id: "c1", output: "42" }] }, "unsupported", "input[1].type"],
    ["an item_reference", { input: [{ type: "item_reference", id: "msg_1" }, { role: "user", content: "x" }] }, "unsupported", "input[0].type"],
    ["an image part", { input: [{ role: "user", content: [{ type: "input_text", text: "x" }, { type: "input_image", image_url: "https://x.example/a.png" }] }] }, "unsupported", "input[0].content[1].type"],
    ["a file part", { input: [{ role: "user", content: [{ type: "input_file", file_id: "file_1" }] }] }, "unsupported", "input[0].content[0].type"],
    ["tools", { input: "x", tools: [{ type: "function", name: "f", parameters: {} }] }, "unsupported", "tools"],
    ["a required tool_choice", { input: "x", tool_choice: "required" }, "unsupported", "tool_choice"],
    ["a message item without a role", { input: [{ type: "message", content: "x" }] }, "invalid_request", "input[0].role"],
    ["no input", {}, "invalid_request", "input"],
    ["a temperature above 2", { input: "x", temperature: 3 }, "invalid_request", "temperature"],
    ["json_schema without a name", { input: "x", text: { format: { type: "json_schema", schema: { type: "object" } } } }, "invalid_request", "text.format.name"],
  ];
  for (const [what, body, code, param] of cases) {
    it(`answers 400 in OpenAI's shape for ${what}, calling no model and using no quota`, async () => {
      const before = await used(alice);
      const error = await expectOpenAIError(await postRaw({ model: nova.id, ...body }), 400, code, param);
      expect(error.type).toBe("invalid_request_error");
      expect(chatCalls()).toHaveLength(0);
      expect(await used(alice)).toBe(before);
    });
  }

  it("explains that nothing is stored when previous_response_id is sent, and the SDK raises BadRequestError", async () => {
    const error = await expectOpenAIError(await postRaw({ model: nova.id, input: "x", previous_response_id: "resp_1" }), 400, "unsupported", "previous_response_id");
    expect(error.message).toMatch(/nothing is stored/);
    await expect(client(aliceKey).responses.create({ model: nova.id, input: "x", previous_response_id: "resp_1" })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
  });

  it("names the chat completion's refusals by the Responses request's fields", async () => {
    const frank = await registerUser(service);
    const strict = await createPersona(service, frank, { name: "Strict", allow_client_system_messages: false });
    await expectOpenAIError(await post({ model: strict.id, instructions: "Be a pirate.", input: "x" }, frank.auth), 400, "system_messages_not_allowed", "instructions");
    await expectOpenAIError(
      await post({ model: strict.id, input: [{ role: "user", content: "x" }, { role: "system", content: "Be a pirate." }, { role: "user", content: "y" }] }, frank.auth),
      400,
      "system_messages_not_allowed",
      "input[1]",
    );
    await expectOpenAIError(await post({ model: nova.id, input: "x", top_logprobs: 2 }), 400, "unsupported", "top_logprobs");
    expect(chatCalls()).toHaveLength(0);
  });

  it("answers an unknown model and another user's private persona with 404 model_not_found", async () => {
    const hidden = await createPersona(service, await registerUser(service), { name: "Private Bob" });
    for (const model of ["gpt-4o", hidden.id]) {
      await expectOpenAIError(await post({ model, input: "x" }), 404, "model_not_found", "model");
    }
    await expect(client(aliceKey).responses.create({ model: hidden.id, input: "x" })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect(chatCalls()).toHaveLength(0);
  });

  it("refuses a missing credential with 401 and a wrong key as the SDK's AuthenticationError", async () => {
    const error = await expectOpenAIError(await postRaw({ model: nova.id, input: "x" }, {}), 401, "invalid_api_key", null);
    expect(error.type).toBe("invalid_request_error");
    await expect(client("pk_wrong").responses.create({ model: nova.id, input: "x" })).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it("maps a used-up monthly quota to 429 insufficient_quota that the SDK does not retry", async () => {
    const dave = await registerUser(service);
    const own = await createPersona(service, dave);
    const period = new Date().toISOString().slice(0, 8) + "01";
    await knex()("usage_counters").insert({ user_id: dave.id, period_start: period, messages_sent: 200 });
    const answer = await post({ model: own.id, input: "x" }, dave.auth);
    expect(answer.response.headers.get("x-should-retry")).toBe("false");
    await expectOpenAIError(answer, 429, "insufficient_quota", null);
    await expect(client(dave.accessToken).responses.create({ model: own.id, input: "x" })).rejects.toBeInstanceOf(OpenAI.RateLimitError);
    expect(chatCalls()).toHaveLength(0);
  });
});
