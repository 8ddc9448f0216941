import type { TaskList } from "graphile-worker";
import { describe, expect, it } from "vitest";
import type { EmbeddingsProvider } from "../../server/toolkit/providers/embeddings/types.ts";
import type { ImageProvider } from "../../server/toolkit/providers/images/types.ts";
import type { ModerationProvider } from "../../server/toolkit/providers/moderation/types.ts";
import type { SpeechProvider } from "../../server/toolkit/providers/speech/types.ts";
import { traceImages, traceModeration, traceSpeech } from "../../server/toolkit/tracing/media.ts";
import type { ChatModelProvider } from "../../server/toolkit/providers/llm/types.ts";
import { activeTracing, flushTraces } from "../../server/toolkit/tracing/active.ts";
import { currentTraceparent, linkTo, withTraceparent } from "../../server/toolkit/tracing/carrier.ts";
import { traceTasks } from "../../server/toolkit/tracing/jobs.ts";
import { traceLogFields } from "../../server/toolkit/tracing/logs.ts";
import { traceChatModel, traceEmbeddings } from "../../server/toolkit/tracing/models.ts";
import { tracingWanted } from "../../server/toolkit/tracing/settings.ts";
import { annotateSpan, inSpan, withTraceHeaders } from "../../server/toolkit/tracing/spans.ts";

// Issue 39: traces are opt-in by OpenTelemetry's standard variables, and with them off every hook of
// the service hands back what it was given (no wrapper, no copy), so the hot path pays a call and a
// comparison. The traced side runs in test/ops/tracing.e2e.test.ts.

describe("whether traces are on", () => {
  it("needs an OTLP endpoint, and yields to OTEL_SDK_DISABLED and OTEL_TRACES_EXPORTER=none", () => {
    expect(tracingWanted({})).toBe(false);
    expect(tracingWanted({ OTEL_SERVICE_NAME: "persona", OTEL_TRACES_SAMPLER: "always_on" })).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toBe(true);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/v1/traces" })).toBe(true);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: "  " })).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "TRUE" })).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "false" })).toBe(true);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_TRACES_EXPORTER: "otlp, none" })).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_TRACES_EXPORTER: "otlp" })).toBe(true);
  });
});

describe("a queued job's link", () => {
  it("is read from a W3C traceparent, and nothing else", () => {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const spanId = "00f067aa0ba902b7";
    expect(linkTo(`00-${traceId}-${spanId}-01`)).toEqual({ context: { traceId, spanId, traceFlags: 1, isRemote: true } });
    expect(linkTo(`00-${traceId}-${spanId}-00`)?.context.traceFlags).toBe(0);
    for (const other of [undefined, null, 42, "", "garbage", `01-${traceId}-${spanId}-01`, `00-${"0".repeat(32)}-${spanId}-01`, `00-${traceId}-${"0".repeat(16)}-01`, `00-${traceId.toUpperCase()}-${spanId}-01`]) {
      expect(linkTo(other), String(other)).toBeUndefined();
    }
  });
});

describe("with traces off", () => {
  it("leaves every hook's input as it was", async () => {
    expect(activeTracing()).toBeUndefined();
    const payload = { conversationId: "c1" };
    expect(withTraceparent(payload)).toBe(payload);
    expect(currentTraceparent()).toBeUndefined();
    const tasks: TaskList = { some_task: async () => undefined };
    expect(traceTasks(tasks)).toBe(tasks);
    const model = { name: "local" } as ChatModelProvider;
    expect(traceChatModel(model)).toBe(model);
    const embeddings = { name: "local", model: "m" } as EmbeddingsProvider;
    expect(traceEmbeddings(embeddings)).toBe(embeddings);
    const speech = { name: "local" } as SpeechProvider;
    expect(traceSpeech(speech)).toBe(speech);
    const images = { name: "local" } as ImageProvider;
    expect(traceImages(images)).toBe(images);
    const moderation = { name: "wordlist" } as ModerationProvider;
    expect(traceModeration(moderation)).toBe(moderation);
    expect(traceLogFields()).toBeUndefined();
    const headers = { "webhook-id": "e1" };
    expect(withTraceHeaders(headers)).toBe(headers);
    expect(() => annotateSpan({ "persona.webhook.delivered": true }, "failed")).not.toThrow();
    expect(await inSpan({ name: "webhook delivery" }, async () => 42)).toBe(42);
    await expect(inSpan({ name: "webhook delivery" }, async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    await expect(flushTraces()).resolves.toBeUndefined();
  });
});
