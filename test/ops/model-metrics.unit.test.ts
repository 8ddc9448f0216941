import { beforeAll, describe, expect, it } from "vitest";
import { measuredChatModel } from "../../server/toolkit/metrics/replies.ts";
import { registry, turnMetricsOn } from "../../server/toolkit/metrics/registry.ts";
import type { ChatModelProvider, ChatRequest, ChatStreamChunk } from "../../server/toolkit/providers/llm/types.ts";
import { parseExposition, total } from "./exposition.ts";

// The chat model seen through the metrics wrapper: the same answers and chunks, each call counted by
// model, purpose and outcome, the first text timed, tokens counted.

function fakeModel(chunks: ChatStreamChunk[], failure?: Error): ChatModelProvider {
  return {
    name: "fake",
    complete: async () => {
      if (failure) throw failure;
      return { content: "Hi", model: "fake-model", usage: { inputTokens: 7, outputTokens: 3 } };
    },
    async *stream() {
      for (const chunk of chunks) yield chunk;
      if (failure) throw failure;
    },
  };
}

const request = (model: string, purpose?: ChatRequest["purpose"]): ChatRequest => ({ model, messages: [{ role: "user", content: "Hello" }], ...(purpose ? { purpose } : {}) });
const samples = async () => parseExposition(await registry.metrics());

async function drain(stream: AsyncIterable<ChatStreamChunk>, stopAfter = Infinity): Promise<ChatStreamChunk[]> {
  const seen: ChatStreamChunk[] = [];
  for await (const chunk of stream) {
    seen.push(chunk);
    if (seen.length >= stopAfter) break;
  }
  return seen;
}

beforeAll(() => turnMetricsOn());

describe("measuredChatModel", () => {
  const chunks: ChatStreamChunk[] = [
    { type: "delta", content: "Hel" },
    { type: "delta", content: "lo" },
    { type: "usage", usage: { inputTokens: 12, outputTokens: 2 }, finishReason: "stop" },
  ];

  it("passes a stream through unchanged and counts it, its first text and its tokens", async () => {
    const model = measuredChatModel(fakeModel(chunks));
    expect(await drain(model.stream(request("m-stream")))).toEqual(chunks);
    const now = await samples();
    expect(total(now, "persona_model_calls_total", { model: "m-stream", purpose: "reply", outcome: "ok" })).toBe(1);
    expect(total(now, "persona_model_first_delta_seconds_count", { model: "m-stream" })).toBe(1);
    expect(total(now, "persona_reply_tokens_sum", { model: "m-stream" })).toBe(2);
    expect(total(now, "persona_model_tokens_total", { model: "m-stream", direction: "input" })).toBe(12);
  });

  it("counts a stream its reader left early as stopped, and a failed one as error", async () => {
    const model = measuredChatModel(fakeModel(chunks));
    expect(await drain(model.stream(request("m-stop")), 1)).toEqual([chunks[0]]);
    const broken = measuredChatModel(fakeModel([chunks[0]!], Object.assign(new Error("upstream broke"), { name: "UpstreamError" })));
    await expect(drain(broken.stream(request("m-broken")))).rejects.toThrow("upstream broke");
    const aborted = measuredChatModel(fakeModel([], Object.assign(new Error("left"), { name: "AbortError" })));
    await expect(drain(aborted.stream(request("m-aborted")))).rejects.toThrow("left");
    const now = await samples();
    expect(total(now, "persona_model_calls_total", { model: "m-stop", outcome: "stopped" })).toBe(1);
    expect(total(now, "persona_model_calls_total", { model: "m-broken", outcome: "error" })).toBe(1);
    expect(total(now, "persona_model_calls_total", { model: "m-aborted", outcome: "aborted" })).toBe(1);
  });

  it("counts blocking calls by purpose; only replies count towards tokens per reply", async () => {
    const model = measuredChatModel(fakeModel([]));
    expect(await model.complete(request("m-block", "title"))).toEqual({ content: "Hi", model: "fake-model", usage: { inputTokens: 7, outputTokens: 3 } });
    await model.complete(request("m-block"));
    await expect(measuredChatModel(fakeModel([], new Error("down"))).complete(request("m-block"))).rejects.toThrow("down");
    const now = await samples();
    expect(total(now, "persona_model_calls_total", { model: "m-block", purpose: "title", outcome: "ok" })).toBe(1);
    expect(total(now, "persona_model_calls_total", { model: "m-block", purpose: "reply", outcome: "ok" })).toBe(1);
    expect(total(now, "persona_model_calls_total", { model: "m-block", purpose: "reply", outcome: "error" })).toBe(1);
    expect(total(now, "persona_reply_tokens_count", { model: "m-block" })).toBe(1);
  });
});
