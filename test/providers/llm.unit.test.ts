import { createRequire } from "node:module";
import { Tiktoken, type TiktokenBPE } from "js-tiktoken/lite";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { LocalChatModel } from "../../server/toolkit/providers/llm/local.ts";
import { OpenAIChatModel } from "../../server/toolkit/providers/llm/openai.ts";
import { countChatTokens, countTokens, truncateToTokens } from "../../server/toolkit/providers/llm/tokens.ts";
import { UpstreamError } from "../../server/toolkit/providers/errors.ts";
import type { ChatRequest, ChatStreamChunk } from "../../server/toolkit/providers/llm/types.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";

const settings = { apiKey: "sk-test-secret-key", maxOutputTokens: 256, timeoutMs: 5_000, maxRetries: 0 };

async function collect(stream: AsyncIterable<ChatStreamChunk>): Promise<ChatStreamChunk[]> {
  const chunks: ChatStreamChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

/** Reads a stream until it fails; returns the deltas seen before and the error. */
async function collectUntilError(stream: AsyncIterable<ChatStreamChunk>): Promise<{ deltas: string[]; error: unknown }> {
  const deltas: string[] = [];
  try {
    for await (const chunk of stream) if (chunk.type === "delta") deltas.push(chunk.content);
  } catch (error) {
    return { deltas, error };
  }
  throw new Error("the stream did not fail");
}

const deltasOf = (chunks: ChatStreamChunk[]) => chunks.flatMap((c) => (c.type === "delta" ? [c.content] : []));

const request = (content: string, extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model: "gpt-4o-mini",
  messages: [
    { role: "system", content: "You are Captain Nova, a starship pilot." },
    { role: "user", content },
  ],
  ...extra,
});

describe("OpenAIChatModel against the fake OpenAI server", () => {
  let fake: FakeOpenAI;
  let model: OpenAIChatModel;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    model = new OpenAIChatModel({ ...settings, baseUrl: fake.baseUrl });
  });
  afterAll(async () => fake.close());
  beforeEach(() => fake.reset());

  it("completes with the upstream usage, sending the key and the token limit", async () => {
    const result = await model.complete(request("Hello there"));
    expect(result.content).toBe("Echo: Hello there");
    expect(result.model).toBe("gpt-4o-mini");
    expect(result.usage.inputTokens).toBeGreaterThan(0);
    expect(result.usage.outputTokens).toBeGreaterThan(0);
    const [sent] = fake.requests;
    expect(sent!.headers.authorization).toBe("Bearer sk-test-secret-key");
    expect(sent!.body).toMatchObject({ model: "gpt-4o-mini", max_tokens: 256, messages: [{ role: "system" }, { role: "user", content: "Hello there" }] });
  });

  it("streams the pieces in order, then the usage", async () => {
    fake.chat.next({ chunks: ["One ", "two ", "three."] });
    const chunks = await collect(model.stream(request("Count")));
    expect(deltasOf(chunks)).toEqual(["One ", "two ", "three."]);
    expect(chunks.at(-1)).toEqual({ type: "usage", usage: { inputTokens: expect.any(Number), outputTokens: expect.any(Number) }, finishReason: "stop" });
    expect(chunks.filter((c) => c.type === "usage")).toHaveLength(1);
    expect(fake.requests[0]!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it.each([429, 500])("turns a %i answer into an UpstreamError with that status, without the upstream message", async (status) => {
    fake.chat.next({ status, errorBody: { error: { message: "Incorrect API key provided: sk-test***key", type: "invalid_request_error", code: "rate_limit" } } });
    const error = await model.complete(request("Hi")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).status).toBe(status);
    expect((error as UpstreamError).message).not.toMatch(/sk-test|Incorrect/);

    fake.chat.next({ status, retryAfter: "0" });
    const streamed = await collectUntilError(model.stream(request("Hi")));
    expect(streamed.error).toBeInstanceOf(UpstreamError);
    expect((streamed.error as UpstreamError).status).toBe(status);
  });

  it("fails with an UpstreamError when the connection drops mid-stream, after the first deltas", async () => {
    fake.chat.next({ chunks: ["a ", "b ", "c ", "d "], failAfterChunks: 2 });
    const { deltas, error } = await collectUntilError(model.stream(request("Hi")));
    expect(deltas).toEqual(["a ", "b "]);
    expect(error).toBeInstanceOf(UpstreamError);
    expect(fake.requests[0]!.aborted).toBe(false);
  });

  it("fails with an UpstreamError when the stream carries an error object", async () => {
    fake.chat.next({ chunks: ["a ", "b ", "c "], failAfterChunks: 1, failWith: "error-event" });
    const { deltas, error } = await collectUntilError(model.stream(request("Hi")));
    expect(deltas).toEqual(["a "]);
    expect(error).toBeInstanceOf(UpstreamError);
  });

  it("aborts mid-stream with an AbortError, and the upstream request is cancelled", async () => {
    // Slow chunks keep the stream open while the test aborts it.
    fake.chat.next({ chunks: ["a ", "b ", "c ", "d "], chunkDelayMs: 1_000 });
    const controller = new AbortController();
    const deltas: string[] = [];
    const error = await (async () => {
      for await (const chunk of model.stream(request("Hi", { signal: controller.signal }))) {
        if (chunk.type === "delta") deltas.push(chunk.content);
        controller.abort();
      }
    })().catch((e: unknown) => e);
    expect(deltas).toEqual(["a "]);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).name).toBe("AbortError");
    const aborted = await fake.waitForAbort(5_000);
    expect(aborted.path).toBe("/v1/chat/completions");
    expect(fake.requests[0]!.aborted).toBe(true);
  });

  it("aborts a completion with an AbortError", async () => {
    fake.chat.next({ firstTokenDelayMs: 2_000 });
    const controller = new AbortController();
    const pending = model.complete(request("Hi", { signal: controller.signal }));
    // Abort once the fake has the request, so that the cancellation reaches it.
    await waitUntil(() => fake.requests.length > 0);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: "AbortError" });
    await fake.waitForAbort(5_000);
  });

  it("times out with an UpstreamError when the provider is slower than timeoutMs", async () => {
    const impatient = new OpenAIChatModel({ ...settings, baseUrl: fake.baseUrl, timeoutMs: 200 });
    fake.chat.always({ firstTokenDelayMs: 3_000 });
    await expect(impatient.complete(request("Hi"))).rejects.toBeInstanceOf(UpstreamError);
    const streamed = await collectUntilError(impatient.stream(request("Hi")));
    expect(streamed.error).toBeInstanceOf(UpstreamError);
  });

  it("times out with an UpstreamError when a stream stalls after its first piece", async () => {
    const impatient = new OpenAIChatModel({ ...settings, baseUrl: fake.baseUrl, timeoutMs: 200 });
    fake.chat.next({ chunks: ["a ", "b "], chunkDelayMs: 3_000 });
    const { deltas, error } = await collectUntilError(impatient.stream(request("Hi")));
    expect(deltas).toEqual(["a "]);
    expect(error).toBeInstanceOf(UpstreamError);
  });

  it("turns a refused connection into an UpstreamError", async () => {
    const closed = await startFakeOpenAI();
    await closed.close();
    const unreachable = new OpenAIChatModel({ ...settings, baseUrl: closed.baseUrl });
    await expect(unreachable.complete(request("Hi"))).rejects.toBeInstanceOf(UpstreamError);
  });
});

async function waitUntil(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe("LocalChatModel", () => {
  const local = new LocalChatModel();
  const conversation: ChatRequest = {
    model: "local-offline-v1",
    messages: [
      { role: "system", content: "You are Captain Nova, a starship pilot who loves the outer planets." },
      { role: "assistant", content: "Hello, I am Captain Nova." },
      { role: "user", content: "Hi!" },
      { role: "assistant", content: "Hi." },
      { role: "user", content: "What is the best planet to visit?" },
    ],
  };

  it("answers deterministically in the persona's name, labelled offline", async () => {
    const first = await local.complete(conversation);
    const second = await local.complete(structuredClone(conversation));
    expect(first.content).toBe(second.content);
    expect(first.model).toBe("local-offline-v1");
    expect(first.content).toMatch(/^Captain Nova \(offline local model\): You said "What is the best planet to visit\?"\./);
    expect(first.content).toContain("3 earlier messages");
    expect(first.usage).toEqual({ inputTokens: countChatTokens(conversation.messages), outputTokens: countTokens(first.content) });
  });

  it("streams the same reply in several pieces, then the usage", async () => {
    const chunks = await collect(local.stream(conversation));
    const deltas = deltasOf(chunks);
    expect(deltas.length).toBeGreaterThan(2);
    expect(deltas.join("")).toBe((await local.complete(conversation)).content);
    expect(chunks.at(-1)).toMatchObject({ type: "usage" });
  });

  it("quotes the first knowledge excerpt and names its source", async () => {
    const withKnowledge: ChatRequest = {
      ...conversation,
      messages: [
        conversation.messages[0]!,
        {
          role: "system",
          content:
            "Relevant excerpts from your knowledge base follow.\n\n[source: planets.md#3]\nSaturn has the most spectacular rings. They are made of ice.\n\n[source: moons.md#0]\nTitan has lakes.",
        },
        ...conversation.messages.slice(1),
      ],
    };
    const { content } = await local.complete(withKnowledge);
    expect(content).toContain('According to planets.md#3, "Saturn has the most spectacular rings."');
    expect(content).not.toContain("Titan");
  });

  it("finds the persona's name in its instructions", async () => {
    const greet = async (instructions: string) =>
      (await local.complete({ model: "local-offline-v1", purpose: "greeting", messages: [{ role: "system", content: instructions }] })).content;
    expect(await greet("You are Captain Nova. You love Saturn.")).toBe("Hello, I am Captain Nova, what shall we talk about today?");
    expect(await greet("Your name is Ada Lovelace\nBe kind.")).toBe("Hello, I am Ada Lovelace, what shall we talk about today?");
    expect(await greet("You are a helpful assistant.")).toBe("Hello, what shall we talk about today?");
  });

  it("writes a short title from the first user message", async () => {
    const { content } = await local.complete({ ...conversation, purpose: "title" });
    expect(content).toBe("Hi");
    const title = await local.complete({
      model: "local-offline-v1",
      purpose: "title",
      messages: [{ role: "user", content: "Can you explain how the rings of Saturn formed over billions of years?" }],
    });
    expect(title.content).toBe("Explain Rings Saturn Formed Over");
    expect(title.content.split(" ").length).toBeLessThanOrEqual(6);
  });

  it("greets in one sentence in the persona's name", async () => {
    const { content } = await local.complete({ model: "local-offline-v1", purpose: "greeting", messages: conversation.messages.slice(0, 1) });
    expect(content).toBe("Hello, I am Captain Nova, what shall we talk about today?");
  });

  it("respects maxOutputTokens", async () => {
    const { content, usage } = await local.complete({ ...conversation, maxOutputTokens: 5 });
    expect(usage.outputTokens).toBeLessThanOrEqual(5);
    expect((await local.complete(conversation)).content.startsWith(content)).toBe(true);
  });

  it("stops with an AbortError when the signal aborts", async () => {
    const controller = new AbortController();
    const error = await (async () => {
      for await (const chunk of local.stream({ ...conversation, signal: controller.signal })) {
        if (chunk.type === "delta") controller.abort();
      }
    })().catch((e: unknown) => e);
    expect((error as Error).name).toBe("AbortError");
    await expect(local.complete({ ...conversation, signal: controller.signal })).rejects.toMatchObject({ name: "AbortError" });
  });
});

describe("tokens", () => {
  it("counts o200k_base tokens", () => {
    expect(countTokens("")).toBe(0);
    expect(countTokens("Hello world")).toBe(2);
    expect(countTokens("Hello world")).toBe(2);
    // Special-token text is ordinary user text, never an error.
    expect(countTokens("<|endoftext|>")).toBeGreaterThan(1);
  });

  it("counts as js-tiktoken does", () => {
    const reference = new Tiktoken(createRequire(import.meta.url)("js-tiktoken/ranks/o200k_base") as TiktokenBPE);
    const samples = [
      "The captain steered the starship past Saturn's rings while the crew watched in silence and awe.",
      "function foo(bar) { return bar?.baz ?? 42; } // https://example.com/a/b?c=d&e=f",
      "Größenordnung übermäßig naïve café résumé — “quotes” …",
      "船长驾驶着星际飞船 こんにちは、世界！ 안녕하세요 세계",
      "🚀🌍👩‍🚀 emoji mix 🎉🎉\n\n\ttabs\r\n 1234567890 3.14159 0xdeadbeef",
    ];
    for (const sample of samples) expect(countTokens(sample)).toBe(reference.encode(sample, [], []).length);
  });

  it("counts a long text without spaces (a pasted blob) in reasonable time", () => {
    // js-tiktoken's own encode takes minutes on this; the vitest timeout would catch a regression.
    const blob = "x".repeat(50_000);
    expect(countTokens(blob)).toBeGreaterThan(1_000);
    expect(countTokens(truncateToTokens(blob, 500))).toBeLessThanOrEqual(500);
  });

  it("counts chat messages with OpenAI's per-message overhead", () => {
    const turns = [
      { role: "system" as const, content: "Be brief." },
      { role: "user" as const, content: "Hello world" },
    ];
    expect(countChatTokens(turns)).toBe(3 + (3 + countTokens("system") + countTokens("Be brief.")) + (3 + countTokens("user") + 2));
    expect(countChatTokens([])).toBe(3);
  });

  it("truncates to a number of tokens", () => {
    const text = "The quick brown fox jumps over the lazy dog.";
    expect(truncateToTokens(text, 100)).toBe(text);
    expect(truncateToTokens(text, 3)).toBe("The quick brown");
    expect(truncateToTokens(text, 0)).toBe("");
    const emoji = "🚀🚀🚀🚀";
    const cut = truncateToTokens(emoji, 3);
    expect(countTokens(cut)).toBeLessThanOrEqual(3);
    expect(cut).not.toContain("\uFFFD");
  });
});
