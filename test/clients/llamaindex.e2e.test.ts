import "./installed.ts";
import { OpenAI } from "@llamaindex/openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { openDoor, SAMPLING, type Door } from "./door.ts";

// LlamaIndex.TS's OpenAI LLM (@llamaindex/openai, with its own `openai` 5 inside) with a persona as
// its model, against the door with a fake upstream that records what reaches the model.
let door: Door;

beforeAll(async () => {
  door = await openDoor();
});
beforeEach(() => door.fake.reset());
afterAll(() => door?.close());

const llm = (fields: Partial<ConstructorParameters<typeof OpenAI>[0]> = {}) => new OpenAI({ model: "nova", apiKey: door.key, baseURL: door.baseURL, maxRetries: 0, ...fields });

describe("LlamaIndex's OpenAI LLM", () => {
  it("chats: the reply, and its parameters reach the upstream", async () => {
    door.fake.chat.next({ reply: "Venus, cadet." });
    const answer = await llm({ temperature: SAMPLING.temperature, topP: SAMPLING.top_p, maxTokens: 40 }).chat({
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Which planet is the bright one?" },
      ],
    });
    expect(answer.message).toMatchObject({ role: "assistant", content: "Venus, cadet." });
    expect(door.lastUpstream()).toMatchObject({ temperature: SAMPLING.temperature, top_p: SAMPLING.top_p, max_tokens: 40 });
    expect(door.lastUpstream().messages).toContainEqual({ role: "system", content: "Be brief." });
  });

  it("streams a chat chunk by chunk", async () => {
    door.fake.chat.next({ chunks: ["Ve", "nus, ", "cadet."] });
    const stream = await llm().chat({ messages: [{ role: "user", content: "Which planet is the bright one?" }], stream: true });
    const deltas: string[] = [];
    for await (const chunk of stream) deltas.push(chunk.delta);
    expect(deltas.join("")).toBe("Venus, cadet.");
    expect(deltas.filter(Boolean).length).toBeGreaterThan(1);
    expect(door.lastUpstream()).toMatchObject({ stream: true });
  });

  it("completes a prompt", async () => {
    door.fake.chat.next({ reply: "Venus." });
    const answer = await llm().complete({ prompt: "Which planet is the bright one?" });
    expect(answer.text).toBe("Venus.");
  });

  it("raises the openai package's 404 for an unknown model", async () => {
    await expect(llm({ model: "no-such-persona" }).chat({ messages: [{ role: "user", content: "Hi" }] })).rejects.toMatchObject({ status: 404, code: "model_not_found" });
  });
});
