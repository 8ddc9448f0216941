import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, expectOk } from "../support/assertions.ts";
import { createConversation, createPersona } from "../support/chat.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";

// API10 Unsafe consumption of APIs (issue 23 item 2): a model provider whose answers are huge,
// malformed or endless. Slow and stalled providers, dropped streams and error events are tested in
// test/providers/llm.unit.test.ts and test/conversations/chat.test.ts; this file adds what a hostile or
// broken provider can send that those do not: the service stays within its own limits and answers
// in its envelope.

type Mode = "huge-whole" | "huge-stream" | "not-json" | "wrong-shape" | "endless";
let mode: Mode = "huge-whole";
let upstream: Server;
let service: TestService;
let user: TestUser;
let conversationId: string;

const HUGE = "x".repeat(200_000);

function completion(content: string) {
  return { id: "c1", object: "chat.completion", created: 1, model: "gpt-4o-mini", choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content } }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } };
}

beforeAll(async () => {
  upstream = createServer((req, res) => {
    let raw = "";
    req.on("data", (chunk: Buffer) => (raw += chunk.toString()));
    req.on("end", () => {
      const stream = raw.includes('"stream":true');
      if (mode === "not-json") return void res.writeHead(200, { "content-type": "application/json" }).end("<html>not json</html>");
      if (mode === "wrong-shape") return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ choices: 42 }));
      if (!stream) return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(completion(HUGE)));
      res.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = (content: string) => `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "gpt-4o-mini", choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
      if (mode === "endless") {
        const timer = setInterval(() => res.write(chunk("more ".repeat(200))), 5);
        res.on("close", () => clearInterval(timer));
        return;
      }
      for (let i = 0; i < 2000; i++) res.write(chunk("y".repeat(100)));
      res.end(`data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "gpt-4o-mini", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\ndata: [DONE]\n\n`);
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  const port = (upstream.address() as AddressInfo).port;
  service = await startTestService({ env: { OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`, OPENAI_API_KEY: "sk-test", LLM_MAX_RETRIES: "0", LLM_TIMEOUT_MS: "3000", EMBEDDINGS_PROVIDER: "local", IMAGES_PROVIDER: "local" } });
  user = await registerUser(service);
  const persona = await createPersona(service, user);
  conversationId = (await createConversation(service, user, persona.id)).id;
}, 120_000);

afterAll(async () => {
  await service?.close();
  upstream?.closeAllConnections();
  await new Promise((resolve) => upstream?.close(resolve));
});

const send = () =>
  service.clientFor(user).POST("/v1/conversations/{id}/messages", { params: { path: { id: conversationId } }, body: { content: "Tell me everything." } });
/** The streamed send, its answer read as text. */
const sendStream = () =>
  service.clientFor(user).POST("/v1/conversations/{id}/messages/stream", { params: { path: { id: conversationId } }, body: { content: "Tell me everything." }, parseAs: "text" });

async function storedReplies(): Promise<string[]> {
  const body = await expectOk(service.clientFor(user).GET("/v1/conversations/{id}/messages", { params: { path: { id: conversationId }, query: { limit: 100 } } }));
  return body.data.filter((m) => m.role === "assistant").map((m) => m.content);
}

describe("API10: what a model provider sends back", () => {
  it("a reply far over the output limit (200,000 characters in one completion) is cut to the message limit", async () => {
    mode = "huge-whole";
    const { data, error, response } = await send();
    expect(response.status, JSON.stringify(error ?? data).slice(0, 300)).toBe(201);
    expect(data!.assistant_message.content.length).toBeLessThanOrEqual(32_000);
    for (const reply of await storedReplies()) expect(reply.length).toBeLessThanOrEqual(32_000);
  });

  it("a stream far over the output limit (200,000 characters) is cut to the message limit", async () => {
    mode = "huge-stream";
    const { data: text = "", response } = await sendStream();
    expect(response.status).toBe(200);
    expect(text.length).toBeLessThan(200_000);
    for (const reply of await storedReplies()) expect(reply.length).toBeLessThanOrEqual(32_000);
  });

  it("a stream that never ends is stopped at the message limit, and the answer ends", async () => {
    mode = "endless";
    const { data: text = "", response } = await sendStream();
    expect(response.status).toBe(200);
    expect(text).toMatch(/event: (done|error)/);
    for (const reply of await storedReplies()) expect(reply.length).toBeLessThanOrEqual(32_000);
  }, 60_000);

  it("an answer that is not JSON, or JSON of another shape, is a 502 in the envelope and stores nothing", async () => {
    for (const broken of ["not-json", "wrong-shape"] as const) {
      mode = broken;
      const before = (await storedReplies()).length;
      const body = await expectError(await send(), 502, "upstream_error");
      expect(JSON.stringify(body)).not.toMatch(/html|choices|TypeError|SyntaxError/);
      expect((await storedReplies()).length).toBe(before);
    }
  });
});
