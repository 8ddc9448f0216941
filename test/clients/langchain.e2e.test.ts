import "./installed.ts";
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type AIMessageChunk } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { ChatOpenAI, type ChatOpenAIFields } from "@langchain/openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { openDoor, PERSONA_INSTRUCTIONS, SAMPLING, type Door } from "./door.ts";

// LangChain's ChatOpenAI (@langchain/openai) with a persona as its model: LangChain's own names for
// the parameters (topP, maxTokens, stop, modelKwargs, call options), its structured output and tool
// binding, against the door with a fake upstream that records what reaches the model.
let door: Door;

beforeAll(async () => {
  door = await openDoor();
});
beforeEach(() => door.fake.reset());
afterAll(() => door?.close());

const chat = (fields: ChatOpenAIFields = {}) =>
  new ChatOpenAI({ model: "nova", apiKey: door.key, configuration: { baseURL: door.baseURL }, maxRetries: 0, ...fields });

const question = [new HumanMessage("Which planet is the bright one?")];
const Planet = z.object({ planet: z.string().describe("The planet's name"), moons: z.number() });

describe("LangChain's ChatOpenAI", () => {
  it("invokes a blocking completion: the reply, the model's finish reason and usage", async () => {
    door.fake.chat.next({ reply: "Venus, cadet." });
    const answer = await chat().invoke([new SystemMessage("Be brief."), ...question]);
    expect(answer.content).toBe("Venus, cadet.");
    expect(answer.response_metadata).toMatchObject({ finish_reason: "stop" });
    expect(answer.usage_metadata?.output_tokens).toBeGreaterThan(0);
    expect(door.lastUpstream().messages.slice(0, 2)).toEqual([
      { role: "system", content: PERSONA_INSTRUCTIONS },
      { role: "system", content: "Be brief." },
    ]);
  });

  it("streams chunk by chunk, with usage", async () => {
    door.fake.chat.next({ chunks: ["Ve", "nus, ", "cadet."] });
    const pieces: string[] = [];
    let whole: AIMessageChunk | undefined;
    for await (const chunk of await chat().stream(question)) {
      if (typeof chunk.content === "string" && chunk.content) pieces.push(chunk.content);
      whole = whole ? whole.concat(chunk) : chunk;
    }
    expect(pieces).toEqual(["Ve", "nus, ", "cadet."]);
    expect(whole?.usage_metadata?.output_tokens).toBeGreaterThan(0);
    expect(door.lastUpstream()).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it("passes its parameters to the upstream under OpenAI's names", async () => {
    const model = chat({
      temperature: SAMPLING.temperature,
      topP: SAMPLING.top_p,
      presencePenalty: SAMPLING.presence_penalty,
      frequencyPenalty: SAMPLING.frequency_penalty,
      stop: [...SAMPLING.stop],
      maxTokens: 40,
      logitBias: { "1234": -100 },
      user: "end-user-7",
      modelKwargs: { seed: SAMPLING.seed },
    });
    await model.invoke(question);
    expect(door.lastUpstream()).toMatchObject({ ...SAMPLING, max_tokens: 40, logit_bias: { "1234": -100 }, user: "end-user-7" });
    // The same through call options, and a call's stop over the model's.
    await chat().invoke(question, { seed: 7, stop: ["END"] });
    expect(door.lastUpstream()).toMatchObject({ seed: 7, stop: ["END"] });
  });

  it("reports finish_reason length when maxTokens cuts the reply, blocking and streamed", async () => {
    door.fake.chat.always({ reply: "one two three four five six" });
    const cut = await chat({ maxTokens: 3 }).invoke(question);
    expect(cut.content).toBe("one two three ");
    expect(cut.response_metadata).toMatchObject({ finish_reason: "length" });
    let last: AIMessageChunk | undefined;
    for await (const chunk of await chat({ maxTokens: 3 }).stream(question)) last = last ? last.concat(chunk) : chunk;
    expect(last?.response_metadata).toMatchObject({ finish_reason: "length" });
  });

  describe("withStructuredOutput", () => {
    it("by JSON schema: response_format json_schema reaches the upstream and the reply is parsed", async () => {
      door.fake.chat.next({ reply: '{"planet":"Venus","moons":0}' });
      const answer = await chat().withStructuredOutput(Planet, { name: "planet", method: "jsonSchema" }).invoke(question);
      expect(answer).toEqual({ planet: "Venus", moons: 0 });
      expect(door.lastUpstream().response_format).toMatchObject({ type: "json_schema", json_schema: { name: "planet", schema: { type: "object", required: ["planet", "moons"] } } });
    });

    it("by function calling: a forced tool reaches the upstream and its call's arguments are parsed", async () => {
      door.fake.chat.next({ reply: "", toolCalls: [{ id: "call_1", name: "planet", arguments: '{"planet":"Venus","moons":0}' }] });
      const answer = await chat().withStructuredOutput(Planet, { name: "planet", method: "functionCalling" }).invoke(question);
      expect(answer).toEqual({ planet: "Venus", moons: 0 });
      expect(door.lastUpstream()).toMatchObject({
        tools: [{ type: "function", function: { name: "planet", parameters: { type: "object" } } }],
        tool_choice: { type: "function", function: { name: "planet" } },
      });
    });

    it("in JSON mode: response_format json_object", async () => {
      door.fake.chat.next({ reply: '{"planet":"Venus","moons":0}' });
      const answer = await chat().withStructuredOutput(Planet, { name: "planet", method: "jsonMode" }).invoke([new HumanMessage("Which planet? Answer in JSON.")]);
      expect(answer).toEqual({ planet: "Venus", moons: 0 });
      expect(door.lastUpstream().response_format).toEqual({ type: "json_object" });
    });
  });

  describe("bindTools", () => {
    const starPosition = tool(async ({ star }) => JSON.stringify({ star, azimuth: "E" }), {
      name: "star_position",
      description: "Where a star is now",
      schema: z.object({ star: z.string() }),
    });

    it("sends the tools and reads the model's tool calls, blocking and streamed", async () => {
      door.fake.chat.next({ reply: "", toolCalls: [{ id: "call_vega", name: "star_position", arguments: '{"star":"Vega"}' }] });
      const model = chat().bindTools([starPosition]);
      const answer = await model.invoke(question);
      expect(answer.tool_calls).toEqual([expect.objectContaining({ id: "call_vega", name: "star_position", args: { star: "Vega" } })]);
      expect(answer.response_metadata).toMatchObject({ finish_reason: "tool_calls" });
      expect(door.lastUpstream().tools).toEqual([expect.objectContaining({ type: "function", function: expect.objectContaining({ name: "star_position" }) })]);
      door.fake.chat.next({ reply: "", toolCalls: [{ id: "call_vega", name: "star_position", arguments: '{"star":"Vega"}' }] });
      let streamed: AIMessageChunk | undefined;
      for await (const chunk of await model.stream(question)) streamed = streamed ? streamed.concat(chunk) : chunk;
      expect(streamed?.tool_calls).toEqual([expect.objectContaining({ id: "call_vega", name: "star_position", args: { star: "Vega" } })]);
    });

    it("sends the tool's result back as a tool message and gets the answer", async () => {
      door.fake.chat.next({ reply: "Vega is high in the east." });
      const call = { id: "call_vega", name: "star_position", args: { star: "Vega" } };
      const result = await starPosition.invoke({ ...call, type: "tool_call" });
      const answer = await chat().bindTools([starPosition]).invoke([...question, new AIMessage({ content: "", tool_calls: [call] }), result]);
      expect(answer.content).toBe("Vega is high in the east.");
      expect(result).toBeInstanceOf(ToolMessage);
      expect(door.lastUpstream().messages.slice(-2)).toEqual([
        expect.objectContaining({ role: "assistant", tool_calls: [{ id: "call_vega", type: "function", function: { name: "star_position", arguments: '{"star":"Vega"}' } }] }),
        { role: "tool", tool_call_id: "call_vega", content: '{"star":"Vega","azimuth":"E"}' },
      ]);
    });
  });

  it("continues a last AIMessage (a prefill)", async () => {
    door.fake.chat.next({ reply: " the brightest star in Lyra." });
    const answer = await chat().invoke([new HumanMessage("Tell me about Vega."), new AIMessage("Vega is")]);
    expect(answer.content).toBe(" the brightest star in Lyra.");
    expect(door.lastUpstream().messages.at(-1)).toEqual({ role: "assistant", content: "Vega is" });
  });

  it("talks to the Responses API with useResponsesApi, invoked and streamed", async () => {
    door.fake.chat.next({ reply: "Venus, cadet." });
    const model = chat({ useResponsesApi: true, temperature: SAMPLING.temperature });
    const answer = await model.invoke([new SystemMessage("Be brief."), new HumanMessage("Hello"), new AIMessage("Welcome aboard."), ...question]);
    expect(answer.text).toBe("Venus, cadet.");
    expect(door.lastUpstream()).toMatchObject({ temperature: SAMPLING.temperature });
    expect(door.lastUpstream().messages.slice(-3)).toEqual([
      { role: "user", content: "Hello" },
      { role: "assistant", content: "Welcome aboard." },
      { role: "user", content: "Which planet is the bright one?" },
    ]);
    door.fake.chat.next({ chunks: ["Ve", "nus."] });
    let streamed: AIMessageChunk | undefined;
    for await (const chunk of await model.stream(question)) streamed = streamed ? streamed.concat(chunk) : chunk;
    expect(streamed?.text).toBe("Venus.");
  });

  it("raises MODEL_NOT_FOUND for an unknown model and MODEL_AUTHENTICATION for a wrong key", async () => {
    await expect(chat({ model: "no-such-persona" }).invoke(question)).rejects.toMatchObject({ status: 404, lc_error_code: "MODEL_NOT_FOUND" });
    await expect(chat({ apiKey: "sk-not-a-persona-key" }).invoke(question)).rejects.toMatchObject({ status: 401, lc_error_code: "MODEL_AUTHENTICATION" });
    expect(door.upstream()).toHaveLength(0);
  });
});
