import "./installed.ts";
import { createOpenAI, type OpenAIProvider } from "@ai-sdk/openai";
import { APICallError, generateText, Output, stepCountIs, streamText, tool, type ModelMessage } from "ai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { openDoor, PERSONA_INSTRUCTIONS, SAMPLING, type Door } from "./door.ts";

// Vercel's AI SDK (`ai` with `@ai-sdk/openai`) with a persona as its model: `openai.chat(id)` on
// Chat Completions and the default `openai(id)` on the Responses API, the SDK's own names for the
// parameters (topP, stopSequences, maxOutputTokens, providerOptions.openai), structured output and
// tools, against the door with a fake upstream that records what reaches the model.
let door: Door;
let openai: OpenAIProvider;

beforeAll(async () => {
  door = await openDoor();
  openai = createOpenAI({ baseURL: door.baseURL, apiKey: door.key });
});
beforeEach(() => door.fake.reset());
afterAll(() => door?.close());

const prompt = "Which planet is the bright one?";

async function failureOf(call: Promise<unknown>): Promise<APICallError> {
  const failure = await call.then(
    () => expect.fail("the call succeeded"),
    (error: unknown) => error,
  );
  expect(APICallError.isInstance(failure), String(failure)).toBe(true);
  return failure as APICallError;
}

describe("openai.chat(id): Chat Completions", () => {
  it("generates a reply with system text, the model's finish reason and usage", async () => {
    door.fake.chat.next({ reply: "Venus, cadet." });
    const result = await generateText({ model: openai.chat("nova"), system: "Be brief.", prompt, maxRetries: 0 });
    expect(result.text).toBe("Venus, cadet.");
    expect(result.finishReason).toBe("stop");
    expect(result.usage.outputTokens).toBeGreaterThan(0);
    expect(door.lastUpstream().messages.slice(0, 2)).toEqual([
      { role: "system", content: PERSONA_INSTRUCTIONS },
      { role: "system", content: "Be brief." },
    ]);
  });

  it("streams text chunk by chunk", async () => {
    door.fake.chat.next({ chunks: ["Ve", "nus, ", "cadet."] });
    const result = streamText({ model: openai.chat("nova"), prompt, maxRetries: 0 });
    const parts: string[] = [];
    for await (const part of result.textStream) parts.push(part);
    expect(parts.join("")).toBe("Venus, cadet.");
    expect(parts.length).toBeGreaterThan(1);
    expect(await result.finishReason).toBe("stop");
    expect((await result.usage).outputTokens).toBeGreaterThan(0);
  });

  it("passes its parameters to the upstream under OpenAI's names", async () => {
    await generateText({
      model: openai.chat("nova"),
      prompt,
      temperature: SAMPLING.temperature,
      topP: SAMPLING.top_p,
      presencePenalty: SAMPLING.presence_penalty,
      frequencyPenalty: SAMPLING.frequency_penalty,
      stopSequences: [...SAMPLING.stop],
      seed: SAMPLING.seed,
      maxOutputTokens: 40,
      providerOptions: { openai: { logitBias: { 1234: -100 }, user: "end-user-7" } },
      maxRetries: 0,
    });
    expect(door.lastUpstream()).toMatchObject({ ...SAMPLING, max_tokens: 40, logit_bias: { "1234": -100 }, user: "end-user-7" });
  });

  it("reports finish reason length when maxOutputTokens cuts the reply, generated and streamed", async () => {
    door.fake.chat.always({ reply: "one two three four five six" });
    const cut = await generateText({ model: openai.chat("nova"), prompt, maxOutputTokens: 3, maxRetries: 0 });
    expect(cut).toMatchObject({ text: "one two three ", finishReason: "length" });
    const streamed = streamText({ model: openai.chat("nova"), prompt, maxOutputTokens: 3, maxRetries: 0 });
    expect(await streamed.finishReason).toBe("length");
  });

  it("generates an object with Output.object: a json_schema response format reaches the upstream", async () => {
    door.fake.chat.next({ reply: '{"planet":"Venus","moons":0}' });
    const result = await generateText({
      model: openai.chat("nova"),
      prompt,
      output: Output.object({ schema: z.object({ planet: z.string(), moons: z.number() }) }),
      maxRetries: 0,
    });
    expect(result.output).toEqual({ planet: "Venus", moons: 0 });
    expect(door.lastUpstream().response_format).toMatchObject({ type: "json_schema", json_schema: { schema: { type: "object", required: ["planet", "moons"] } } });
  });

  it("runs a tool: the call comes back from the upstream, the result goes to it, the answer ends the loop", async () => {
    door.fake.chat.next({ reply: "", toolCalls: [{ id: "call_vega", name: "star_position", arguments: '{"star":"Vega"}' }] });
    door.fake.chat.next({ reply: "Vega is high in the east." });
    const result = await generateText({
      model: openai.chat("nova"),
      prompt: "Where is Vega?",
      tools: {
        star_position: tool({ description: "Where a star is now", inputSchema: z.object({ star: z.string() }), execute: async ({ star }) => ({ star, azimuth: "E" }) }),
      },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    expect(result.text).toBe("Vega is high in the east.");
    expect(result.steps[0]?.toolCalls).toEqual([expect.objectContaining({ toolCallId: "call_vega", toolName: "star_position", input: { star: "Vega" } })]);
    const [first, second] = door.upstream();
    expect(first?.tools).toEqual([expect.objectContaining({ type: "function", function: expect.objectContaining({ name: "star_position" }) })]);
    expect(second?.messages.slice(-2)).toEqual([
      expect.objectContaining({ role: "assistant", tool_calls: [{ id: "call_vega", type: "function", function: { name: "star_position", arguments: '{"star":"Vega"}' } }] }),
      { role: "tool", tool_call_id: "call_vega", content: '{"star":"Vega","azimuth":"E"}' },
    ]);
  });

  it("streams a tool call", async () => {
    door.fake.chat.next({ reply: "", toolCalls: [{ id: "call_vega", name: "star_position", arguments: '{"star":"Vega"}' }] });
    const result = streamText({
      model: openai.chat("nova"),
      prompt: "Where is Vega?",
      tools: { star_position: tool({ inputSchema: z.object({ star: z.string() }) }) },
      maxRetries: 0,
    });
    expect(await result.toolCalls).toEqual([expect.objectContaining({ toolCallId: "call_vega", toolName: "star_position", input: { star: "Vega" } })]);
    expect(await result.finishReason).toBe("tool-calls");
  });

  it("continues a last assistant message (a prefill)", async () => {
    door.fake.chat.next({ reply: " the brightest star in Lyra." });
    const messages: ModelMessage[] = [
      { role: "user", content: "Tell me about Vega." },
      { role: "assistant", content: "Vega is" },
    ];
    const result = await generateText({ model: openai.chat("nova"), messages, maxRetries: 0 });
    expect(result.text).toBe(" the brightest star in Lyra.");
    expect(door.lastUpstream().messages.at(-1)).toEqual({ role: "assistant", content: "Vega is" });
  });

  it("raises an APICallError with 404 for an unknown model and 401 for a wrong key", async () => {
    const missing = await failureOf(generateText({ model: openai.chat("no-such-persona"), prompt, maxRetries: 0 }));
    expect(missing.statusCode).toBe(404);
    expect(missing.message).toMatch(/does not exist or you do not have access/);
    const stranger = createOpenAI({ baseURL: door.baseURL, apiKey: "sk-not-a-persona-key" });
    expect((await failureOf(generateText({ model: stranger.chat("nova"), prompt, maxRetries: 0 }))).statusCode).toBe(401);
    expect(door.upstream()).toHaveLength(0);
  });
});

describe("openai(id): the Responses API", () => {
  it("generates a reply with system text", async () => {
    door.fake.chat.next({ reply: "Venus, cadet." });
    const result = await generateText({ model: openai("nova"), system: "Be brief.", prompt, maxRetries: 0 });
    expect(result.text).toBe("Venus, cadet.");
    expect(result.finishReason).toBe("stop");
    expect(door.lastUpstream().messages).toContainEqual({ role: "system", content: "Be brief." });
    expect(door.lastUpstream().messages.at(-1)).toEqual({ role: "user", content: prompt });
  });

  it("streams text", async () => {
    door.fake.chat.next({ chunks: ["Ve", "nus, ", "cadet."] });
    const result = streamText({ model: openai("nova"), prompt, maxRetries: 0 });
    const parts: string[] = [];
    for await (const part of result.textStream) parts.push(part);
    expect(parts.join("")).toBe("Venus, cadet.");
    expect(await result.finishReason).toBe("stop");
  });

  it("passes the sampling parameters and reports finish reason length at maxOutputTokens", async () => {
    door.fake.chat.always({ reply: "one two three four five six" });
    const result = await generateText({ model: openai("nova"), prompt, maxOutputTokens: 3, temperature: SAMPLING.temperature, topP: SAMPLING.top_p, maxRetries: 0 });
    expect(result).toMatchObject({ text: "one two three ", finishReason: "length" });
    expect(door.lastUpstream()).toMatchObject({ max_tokens: 3, temperature: SAMPLING.temperature, top_p: SAMPLING.top_p });
  });

  it("carries a multi-turn conversation with providerOptions.openai.store false", async () => {
    door.fake.chat.next({ reply: "It is Venus." });
    const messages: ModelMessage[] = [{ role: "user", content: prompt }];
    const first = await generateText({ model: openai("nova"), messages, providerOptions: { openai: { store: false } }, maxRetries: 0 });
    messages.push(...first.response.messages, { role: "user", content: "And the red one?" });
    door.fake.chat.next({ reply: "That is Mars." });
    const second = await generateText({ model: openai("nova"), messages, providerOptions: { openai: { store: false } }, maxRetries: 0 });
    expect(second.text).toBe("That is Mars.");
    expect(door.lastUpstream().messages.slice(-3)).toEqual([
      { role: "user", content: prompt },
      { role: "assistant", content: "It is Venus." },
      { role: "user", content: "And the red one?" },
    ]);
  });

  it("refuses the earlier turns the SDK sends as item references without store false, naming the setting", async () => {
    const messages: ModelMessage[] = [{ role: "user", content: prompt }];
    const first = await generateText({ model: openai("nova"), messages, maxRetries: 0 });
    messages.push(...first.response.messages, { role: "user", content: "And the red one?" });
    const refused = await failureOf(generateText({ model: openai("nova"), messages, maxRetries: 0 }));
    expect(refused.statusCode).toBe(400);
    expect(refused.message).toMatch(/item_reference.*providerOptions\.openai\.store: false/s);
  });

  it("raises an APICallError with 404 for an unknown model", async () => {
    const missing = await failureOf(generateText({ model: openai("no-such-persona"), prompt, maxRetries: 0 }));
    expect(missing.statusCode).toBe(404);
  });
});
