import "./installed.ts";
import OpenAI from "openai";
import { zodResponseFormat } from "openai/helpers/zod";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { openDoor, PERSONA_GREETING, PERSONA_INSTRUCTIONS, SAMPLING, type Door } from "./door.ts";

// The official `openai` package, at the version its users install today (test/clients/package.json;
// the service's own dependency is older and has its tests in test/openai), against the
// OpenAI-compatible door with a fake upstream that records what reaches the model.
let door: Door;
let client: OpenAI;

beforeAll(async () => {
  door = await openDoor();
  client = new OpenAI({ baseURL: door.baseURL, apiKey: door.key, maxRetries: 0 });
});
beforeEach(() => door.fake.reset());
afterAll(() => door?.close());

const hello: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "Which planet is the bright one?" }];

describe("the openai package", () => {
  it("lists the personas as models by handle, with their names", async () => {
    const models = [];
    for await (const model of client.models.list()) models.push(model);
    expect(models).toEqual([expect.objectContaining({ id: "nova", object: "model", name: "Captain Nova" })]);
    expect(await client.models.retrieve("nova")).toMatchObject({ id: "nova" });
  });

  it("answers a blocking completion as the persona, with the model's usage", async () => {
    door.fake.chat.next({ reply: "Venus, cadet." });
    const answer = await client.chat.completions.create({ model: "nova", messages: hello });
    expect(answer.choices[0]).toMatchObject({ finish_reason: "stop", message: { role: "assistant", content: "Venus, cadet." } });
    expect(answer.usage?.completion_tokens).toBeGreaterThan(0);
    expect(door.lastUpstream().messages).toEqual([
      { role: "system", content: PERSONA_INSTRUCTIONS },
      { role: "assistant", content: PERSONA_GREETING },
      { role: "user", content: "Which planet is the bright one?" },
    ]);
  });

  it("streams a completion, with the usage chunk it asks for", async () => {
    door.fake.chat.next({ chunks: ["Ve", "nus, ", "cadet."] });
    const stream = await client.chat.completions.create({ model: "nova", messages: hello, stream: true, stream_options: { include_usage: true } });
    let text = "";
    let usage: OpenAI.CompletionUsage | undefined | null;
    const finishes: string[] = [];
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      if (chunk.choices[0]?.finish_reason) finishes.push(chunk.choices[0].finish_reason);
      usage ??= chunk.usage;
    }
    expect(text).toBe("Venus, cadet.");
    expect(finishes).toEqual(["stop"]);
    expect(usage?.total_tokens).toBeGreaterThan(0);
  });

  it("takes the persona by `<username>/<handle>` and by id", async () => {
    await client.chat.completions.create({ model: `${door.user.username}/nova`, messages: hello });
    const byId = await client.chat.completions.create({ model: door.persona.id, messages: hello });
    expect(byId.model).toBe(door.persona.id);
    expect(door.upstream()).toHaveLength(2);
  });

  it("passes every sampling parameter to the upstream", async () => {
    await client.chat.completions.create({
      model: "nova",
      messages: hello,
      ...SAMPLING,
      stop: [...SAMPLING.stop],
      logit_bias: { "1234": -100 },
      user: "end-user-7",
      max_completion_tokens: 50,
    });
    expect(door.lastUpstream()).toMatchObject({ ...SAMPLING, logit_bias: { "1234": -100 }, user: "end-user-7", max_tokens: 50 });
    await client.chat.completions.create({ model: "nova", messages: hello, max_tokens: 20 });
    expect(door.lastUpstream()).toMatchObject({ max_tokens: 20 });
  });

  it("passes the model's finish reason on: length at max_tokens, blocking and streamed", async () => {
    door.fake.chat.always({ reply: "one two three four five six" });
    const cut = await client.chat.completions.create({ model: "nova", messages: hello, max_tokens: 3 });
    expect(cut.choices[0]).toMatchObject({ finish_reason: "length", message: { content: "one two three " } });
    const stream = client.chat.completions.stream({ model: "nova", messages: hello, max_tokens: 3 });
    expect((await stream.finalChatCompletion()).choices[0]?.finish_reason).toBe("length");
  });

  it("parses structured output with zodResponseFormat (json_schema)", async () => {
    const Planet = z.object({ planet: z.string(), moons: z.number() });
    door.fake.chat.next({ reply: '{"planet":"Venus","moons":0}' });
    const parsed = await client.chat.completions.parse({ model: "nova", messages: hello, response_format: zodResponseFormat(Planet, "planet") });
    expect(parsed.choices[0]?.message.parsed).toEqual({ planet: "Venus", moons: 0 });
    expect(door.lastUpstream().response_format).toMatchObject({ type: "json_schema", json_schema: { name: "planet", strict: true, schema: { type: "object", required: ["planet", "moons"] } } });
    await client.chat.completions.create({ model: "nova", messages: hello, response_format: { type: "json_object" } });
    expect(door.lastUpstream().response_format).toEqual({ type: "json_object" });
  });

  describe("tools", () => {
    const tools: OpenAI.ChatCompletionTool[] = [
      { type: "function", function: { name: "star_position", description: "Where a star is now", parameters: { type: "object", properties: { star: { type: "string" } }, required: ["star"] } } },
    ];
    const call = { id: "call_vega", name: "star_position", arguments: '{"star":"Vega"}' };

    it("pass the tools to the upstream and its calls back, blocking and streamed", async () => {
      door.fake.chat.next({ reply: "", toolCalls: [call] });
      const answer = await client.chat.completions.create({ model: "nova", messages: hello, tools, tool_choice: "required", parallel_tool_calls: false });
      expect(door.lastUpstream()).toMatchObject({ tools, tool_choice: "required", parallel_tool_calls: false });
      expect(answer.choices[0]).toMatchObject({ finish_reason: "tool_calls", message: { tool_calls: [{ id: "call_vega", type: "function", function: { name: "star_position", arguments: '{"star":"Vega"}' } }] } });
      door.fake.chat.next({ reply: "", toolCalls: [call] });
      const streamed = await client.chat.completions.stream({ model: "nova", messages: hello, tools }).finalChatCompletion();
      expect(streamed.choices[0]).toMatchObject({ finish_reason: "tool_calls", message: { tool_calls: [{ id: "call_vega", function: { arguments: '{"star":"Vega"}' } }] } });
    });

    it("run a tool loop with runTools: the tool's result goes back as a tool message", async () => {
      door.fake.chat.next({ reply: "", toolCalls: [call] });
      door.fake.chat.next({ reply: "Vega is high in the east." });
      const runner = client.chat.completions.runTools({
        model: "nova",
        messages: hello,
        tools: [
          {
            type: "function",
            function: {
              name: "star_position",
              description: "Where a star is now",
              parameters: { type: "object", properties: { star: { type: "string" } } },
              function: (args: { star: string }) => ({ star: args.star, azimuth: "E" }),
              parse: JSON.parse,
            },
          },
        ],
      });
      expect(await runner.finalContent()).toBe("Vega is high in the east.");
      expect(door.lastUpstream().messages.slice(-2)).toEqual([
        { role: "assistant", content: null, tool_calls: [{ id: "call_vega", type: "function", function: { name: "star_position", arguments: '{"star":"Vega"}' } }] },
        { role: "tool", tool_call_id: "call_vega", content: '{"star":"Vega","azimuth":"E"}' },
      ]);
    });
  });

  it("continues a last assistant message (a prefill)", async () => {
    door.fake.chat.next({ reply: " the brightest star in Lyra." });
    const answer = await client.chat.completions.create({ model: "nova", messages: [...hello, { role: "assistant", content: "Vega is" }] });
    expect(answer.choices[0]?.message.content).toBe(" the brightest star in Lyra.");
    expect(door.lastUpstream().messages.at(-1)).toEqual({ role: "assistant", content: "Vega is" });
  });

  it("raises NotFoundError for an unknown model and AuthenticationError for a wrong key", async () => {
    const missing = await client.chat.completions.create({ model: "no-such-persona", messages: hello }).catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect(missing).toMatchObject({ status: 404, code: "model_not_found", param: "model" });
    const stranger = new OpenAI({ baseURL: door.baseURL, apiKey: "sk-not-a-persona-key", maxRetries: 0 });
    await expect(stranger.chat.completions.create({ model: "nova", messages: hello })).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    expect(door.upstream()).toHaveLength(0);
  });

  it("raises BadRequestError naming an argument the door cannot honour", async () => {
    const refused = await client.chat.completions.create({ model: "nova", messages: hello, logprobs: true }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect(refused).toMatchObject({ status: 400, code: "unsupported", param: "logprobs" });
  });

  describe("the Responses API", () => {
    it("answers responses.create with instructions, blocking and streamed", async () => {
      door.fake.chat.next({ reply: "Venus, cadet." });
      const response = await client.responses.create({ model: "nova", instructions: "Be brief.", input: "Which planet?" });
      expect(response.output_text).toBe("Venus, cadet.");
      expect(door.lastUpstream().messages).toContainEqual({ role: "system", content: "Be brief." });
      door.fake.chat.next({ chunks: ["Ve", "nus."] });
      const stream = client.responses.stream({ model: "nova", input: "Which planet?" });
      const deltas: string[] = [];
      stream.on("response.output_text.delta", (event) => deltas.push(event.delta));
      const final = await stream.finalResponse();
      expect(deltas.join("")).toBe("Venus.");
      expect(final.output_text).toBe("Venus.");
    });

    it("refuses previous_response_id with BadRequestError: nothing is stored", async () => {
      await expect(client.responses.create({ model: "nova", input: "Hi", previous_response_id: "resp_1" })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    });
  });
});
