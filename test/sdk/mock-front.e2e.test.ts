// `npm run mock` as a frontend team runs it (scripts/mock.ts): an unchanged `openai` client, which
// sends `Accept: application/json` on a streamed call, gets the mocked chunks and `[DONE]` from
// chat completions and the Responses API, while blocking calls and Prism's CORS answers are as
// before (issue 35, item 8).
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../support/ports.ts";
import { startProcess, type RunningProcess } from "../support/processes.ts";

let front: RunningProcess;
let client: OpenAI;
let mockUrl: string;

beforeAll(async () => {
  const port = await freePort();
  mockUrl = `http://127.0.0.1:${port}`;
  front = await startProcess({ bin: "node", name: "npm run mock", args: ["scripts/mock.ts"], env: { MOCK_PORT: String(port) }, url: mockUrl, probe: `${mockUrl}/healthz` });
  client = new OpenAI({ baseURL: `${mockUrl}/openai/v1`, apiKey: "pk_mock", maxRetries: 0 });
}, 90_000);

afterAll(async () => {
  await front?.stop();
});

describe("npm run mock", () => {
  it("streams chat completion chunks to an unchanged openai client, ending with the finish reason", async () => {
    const stream = await client.chat.completions.create({ model: "captain-nova", messages: [{ role: "user", content: "Hi" }], stream: true });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? "").join("")).not.toBe("");
    expect(chunks.at(-1)!.choices[0]?.finish_reason).toBe("stop");
  });

  it("answers a blocking call with the JSON completion", async () => {
    const completion = await client.chat.completions.create({ model: "captain-nova", messages: [{ role: "user", content: "Hi" }] });
    expect(completion.object).toBe("chat.completion");
  });

  it("streams the Responses API's events to responses.create", async () => {
    const stream = await client.responses.create({ model: "captain-nova", input: "Hi", stream: true });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types.at(-1)).toBe("response.completed");
  });

  it("passes Prism's CORS answers through", async () => {
    const preflight = await fetch(`${mockUrl}/v1/personas`, { method: "OPTIONS", headers: { origin: "http://app.example", "access-control-request-method": "POST" } });
    expect(preflight.headers.get("access-control-allow-origin")).toBe("http://app.example");
  });
});
