import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { uploaded } from "../knowledge/helpers.ts";
import { createApiClient } from "../support/api.ts";
import { root } from "../support/contract.ts";
import { createConversation, createPersona, readEvents, sendStream } from "../support/chat.ts";
import { freePort } from "../support/ports.ts";
import { startAndWait, type RunningProcess } from "../support/processes.ts";
import { createTestDatabase, databaseSettings, type TestDatabase, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { until } from "../support/wait.ts";
import { createWebhook, loopbackEnv } from "../webhooks/helpers.ts";
import { startReceiver, type Receiver } from "../webhooks/receiver.ts";
import { descendsFrom, parseTraceparent, SpanKind, startTraceReceiver, type ReceivedSpan, type TraceReceiver } from "./tracing-receiver.ts";

// Issue 39: `node server/main.ts` with the standard OTEL_* settings sends its traces over OTLP/HTTP
// (JSON here) to a receiver in this test. A caller's `traceparent` starts the request's trace: its
// span is named by operation and holds the request's statements, the knowledge search's embeddings
// and the model call (with its first-token time), whose upstream gets the trace's `traceparent`. The
// webhook fan-out job the request's events wake is a trace of its own, linked to the request, and
// its delivery sends its `traceparent` to the receiver. A document's ingestion job links to its
// upload. Log lines written inside a span carry its trace id.

const hex = (bytes: number) => randomBytes(bytes).toString("hex");

let fake: FakeOpenAI;
let hook: Receiver;
let otlp: TraceReceiver;
let database: TestDatabase;
let dataDir: string | undefined;
let server: RunningProcess;
let service: TestService;
let user: TestUser;

beforeAll(async () => {
  [fake, hook, otlp, database] = await Promise.all([startFakeOpenAI(), startReceiver(), startTraceReceiver(), createTestDatabase()]);
  dataDir = database.url ? undefined : await mkdtemp(join(tmpdir(), "persona-traces-"));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  server = await startAndWait("node", ["server/main.ts"], `${url}/readyz`, 120_000, {
    PORT: String(port),
    ...(database.url ? databaseSettings(database.url) : { PERSONA_DATA_DIR: dataDir!, EMBEDDED_DB_IN_MEMORY: "true" }),
    LOG_LEVEL: "debug",
    LOG_PRETTY: "false",
    LLM_PROVIDER: "openai",
    OPENAI_BASE_URL: fake.baseUrl,
    OPENAI_API_KEY: "sk-test-traces",
    ...loopbackEnv,
    AUTO_AVATARS: "false",
    WORKER_POLL_INTERVAL_MS: "100",
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_SERVICE_NAME: "persona-traces-test",
    OTEL_BSP_SCHEDULE_DELAY: "100",
  });
  service = { url, fetch: (path: string, init?: RequestInit) => fetch(`${url}${path}`, init), clientFor: (who: { auth: Record<string, string> }) => createApiClient(url, who.auth) } as unknown as TestService;
  user = await registerUser(service);
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await Promise.all([fake?.close(), hook?.close(), otlp?.close()]);
  await database?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** Waits until the spans hold one that `match` finds, and answers it. */
const spanWhere = (what: string, match: (span: ReceivedSpan) => boolean) => until(what, () => otlp.spans.find(match), 30_000);

describe("traces of a chat send, its webhook and a job", { timeout: 180_000 }, () => {
  const chatTrace = hex(16);
  const callerSpan = hex(8);
  const uploadTrace = hex(16);
  let request: ReceivedSpan;

  beforeAll(async () => {
    await createWebhook(service, user, { url: hook.url, events: ["message.created"] });
    const persona = await createPersona(service, user);
    // A document of the persona's knowledge, uploaded in a trace of its own: its ingestion is a job.
    const document = await uploaded(service, { ...user, auth: { ...user.auth, traceparent: `00-${uploadTrace}-${hex(8)}-01` } } as TestUser, persona.id, "ship.txt", "The starship Meridian has a crew of forty and a cat named Vector.");
    await until("the document is ready", async () => {
      const response = await service.fetch(`/v1/knowledge/${persona.id}/documents/${document.id}`, { headers: user.auth });
      return ((await response.json()) as { status: string }).status === "ready";
    });
    const conversation = await createConversation(service, user, persona.id);
    const response = await sendStream(service, user, conversation.id, "How many crew does the Meridian have?", { headers: { traceparent: `00-${chatTrace}-${callerSpan}-01` } });
    expect(response.status).toBe(200);
    expect((await readEvents(response)).events.at(-1)?.event).toBe("done");
    request = await spanWhere("the request's span", (span) => span.traceId === chatTrace && span.kind === SpanKind.SERVER);
  });

  it("writes the trace id on the log lines written inside the request", async () => {
    // Read while the request's lines are still within the output kept (debug lines follow fast).
    const traced = await until("a log line of the request's trace", () => {
      const lines = server.output().split("\n").flatMap((line) => {
        try {
          return [JSON.parse(line) as { trace_id?: string; span_id?: string }];
        } catch {
          return []; // the first line kept may be cut, and not every line is JSON
        }
      });
      const found = lines.filter((line) => line.trace_id === chatTrace);
      return found.length > 0 ? found : undefined;
    });
    expect(traced.every((line) => /^[\da-f]{16}$/.test(line.span_id ?? ""))).toBe(true);
  });

  it("names the request's span by operation and parents it on the caller's traceparent", () => {
    expect(otlp.rejected).toEqual([]);
    expect(request.parentSpanId).toBe(callerSpan);
    expect(request.name).toBe("conversations_stream_message");
    expect(request.attributes["http.route"]).toBe("/v1/conversations/:id/messages/stream");
    expect(request.attributes["http.response.status_code"]).toBe(200);
    expect(request.service).toBe("persona-traces-test");
  });

  it("holds the request's database statements", async () => {
    const statement = await spanWhere("a statement of the request", (span) => span.traceId === chatTrace && span.attributes["db.system.name"] === "postgresql" && descendsFrom(otlp.spans, span, request));
    expect(statement.kind).toBe(SpanKind.CLIENT);
    expect(String(statement.attributes["db.query.text"] ?? "")).not.toBe("");
  });

  it("holds the knowledge search's embeddings and the model call, with its first token, and sends the traceparent upstream", async () => {
    const embeddings = await spanWhere("the search's embeddings", (span) => span.traceId === chatTrace && span.name.startsWith("embeddings "));
    expect(descendsFrom(otlp.spans, embeddings, request)).toBe(true);
    const model = await spanWhere("the model call", (span) => span.traceId === chatTrace && span.name.startsWith("chat ") && span.attributes["gen_ai.request.stream"] === true);
    expect(descendsFrom(otlp.spans, model, request)).toBe(true);
    expect(model.kind).toBe(SpanKind.CLIENT);
    expect(model.attributes["gen_ai.provider.name"]).toBe("openai");
    expect(model.attributes["gen_ai.response.time_to_first_chunk"]).toBeGreaterThanOrEqual(0);
    expect(model.events.map((event) => event.name)).toContain("first_token");
    expect(model.attributes["gen_ai.usage.output_tokens"]).toBeGreaterThan(0);
    // The upstream saw the trace: its request's parent is a span of it, below the model call.
    const upstream = fake.requests.filter((recorded) => recorded.path === "/v1/chat/completions" && (recorded.body as { stream?: boolean }).stream === true);
    const seen = upstream.map((recorded) => parseTraceparent(recorded.headers.traceparent)).find((parent) => parent?.traceId === chatTrace);
    expect(seen).toBeDefined();
    const parent = await spanWhere("the upstream call's span", (span) => span.traceId === chatTrace && span.spanId === seen!.spanId);
    expect(descendsFrom(otlp.spans, parent, model)).toBe(true);
  });

  it("links the webhook fan-out job to the request, and its delivery sends the traceparent to the receiver", async () => {
    const job = await spanWhere("the fan-out job linked to the request", (span) => span.name === "job webhooks_fanout" && span.links.some((link) => link.traceId === chatTrace));
    expect(job.kind).toBe(SpanKind.CONSUMER);
    expect(job.traceId).not.toBe(chatTrace);
    expect(job.parentSpanId).toBe("");
    // A fan-out takes every event waiting (an earlier request's job may deliver this one's): each
    // delivery links to the request that recorded its own event, inside the trace of the job that ran it.
    const delivery = await spanWhere("a delivery of the request's event", (span) => span.name === "webhook delivery" && span.links.some((link) => link.traceId === chatTrace));
    const carrier = await spanWhere("the job that ran the delivery", (span) => span.spanId === delivery.parentSpanId && span.traceId === delivery.traceId);
    expect(carrier.name).toMatch(/^job webhooks_/);
    expect(delivery.attributes["persona.webhook.delivered"]).toBe(true);
    // The receiver got a traceparent of the delivery's trace, from the delivery or its HTTP call.
    const received = await until("the delivery's traceparent at the receiver", () =>
      hook.received.map((entry) => parseTraceparent(entry.headers.traceparent)).find((parent) => parent?.traceId === delivery.traceId),
    );
    const sender = await spanWhere("the span that sent the delivery", (span) => span.traceId === delivery.traceId && span.spanId === received.spanId);
    expect(descendsFrom(otlp.spans, sender, delivery)).toBe(true);
  });

  it("links a document's ingestion job to its upload, with its embeddings inside", async () => {
    const job = await spanWhere("the ingestion job", (span) => span.name.startsWith("job ") && span.links.some((link) => link.traceId === uploadTrace));
    const embeddings = await spanWhere("the ingestion's embeddings", (span) => span.traceId === job.traceId && span.name.startsWith("embeddings "));
    expect(descendsFrom(otlp.spans, embeddings, job)).toBe(true);
  });

});

/**
 * Every module of @opentelemetry that anything asks for while a process runs `startTracing` with
 * `env` and then loads the service's modules (a resolve hook records them).
 */
async function openTelemetryModulesLoaded(env: NodeJS.ProcessEnv): Promise<string[]> {
  const hook = `data:text/javascript,${encodeURIComponent(`
    import { registerHooks } from "node:module";
    globalThis.openTelemetryModules = [];
    registerHooks({ resolve(specifier, context, next) {
      const resolved = next(specifier, context);
      if (resolved.url.includes("/@opentelemetry/")) globalThis.openTelemetryModules.push(resolved.url);
      return resolved;
    } });`)}`;
  const module = (path: string) => JSON.stringify(pathToFileURL(join(root, path)).href);
  const script = `
    const { startTracing } = await import(${module("server/toolkit/tracing/start.ts")});
    await startTracing(process.env);
    await import(${module("server/runtime.ts")});
    process.stdout.write(JSON.stringify(globalThis.openTelemetryModules), () => process.exit(0));`;
  const child = spawn(process.execPath, ["--import", hook, "--input-type=module", "-e", script], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  let errors = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (errors += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  expect(code, errors).toBe(0);
  return JSON.parse(output) as string[];
}

describe("traces of speech and image calls", { timeout: 120_000 }, () => {
  it("hold a client span of the provider's call inside the request's span, without the text", async () => {
    const speechTrace = hex(16);
    const traced = (traceId: string) => service.clientFor({ auth: { ...user.auth, traceparent: `00-${traceId}-${hex(8)}-01` } });
    const spoken = await traced(speechTrace).POST("/v1/voice/tts", { body: { text: "Welcome aboard, cadet.", voice_id: "nova" }, parseAs: "arrayBuffer" });
    expect(spoken.response.status).toBe(200);
    const speechRequest = await spanWhere("the speech request's span", (span) => span.traceId === speechTrace && span.kind === SpanKind.SERVER);
    const speech = await spanWhere("the speech call's span", (span) => span.traceId === speechTrace && span.name === "speech local");
    expect(descendsFrom(otlp.spans, speech, speechRequest)).toBe(true);
    expect(speech.kind).toBe(SpanKind.CLIENT);
    expect(speech.attributes).toMatchObject({ "gen_ai.provider.name": "local", "persona.speech.voice": "nova", "persona.speech.characters": 22 });
    expect(Number(speech.attributes["persona.audio.bytes"])).toBeGreaterThan(0);
    expect(JSON.stringify(speech)).not.toContain("Welcome aboard");

    const imageTrace = hex(16);
    const drawn = await traced(imageTrace).POST("/v1/images/generate", { body: { prompt: "A starship bridge at night", style: "banner", aspect_ratio: "16:9" } });
    expect(drawn.response.status).toBe(200);
    const imageRequest = await spanWhere("the image request's span", (span) => span.traceId === imageTrace && span.kind === SpanKind.SERVER);
    const image = await spanWhere("the image call's span", (span) => span.traceId === imageTrace && span.name === "image local");
    expect(descendsFrom(otlp.spans, image, imageRequest)).toBe(true);
    expect(image.attributes).toMatchObject({ "persona.image.style": "banner", "persona.image.aspect_ratio": "16:9" });
    expect(JSON.stringify(image)).not.toContain("starship bridge");
  });
});

describe("start-up without an OTLP endpoint", { timeout: 120_000 }, () => {
  const withoutOtel = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("OTEL_")));

  it("loads nothing of the SDK, its exporters or its instrumentations with the whole service", async () => {
    // The API alone is loaded, by prom-client (exemplars), whatever the settings.
    const packages = new Set((await openTelemetryModulesLoaded(withoutOtel)).map((url) => /\/@opentelemetry\/([^/]+)\//.exec(url)?.[1]));
    packages.delete("api");
    expect([...packages]).toEqual([]);
  });

  it("loads the SDK when an endpoint is set (the check above sees what loads)", async () => {
    const loaded = await openTelemetryModulesLoaded({ ...withoutOtel, OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9" });
    expect(loaded.some((url) => url.includes("/@opentelemetry/sdk-node/"))).toBe(true);
  });
});
