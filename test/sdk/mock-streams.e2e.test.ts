// The Prism mock's event streams end as the service's do (issue 35, item 8): every
// `text/event-stream` answer of the contract is sent as its example is written, with the blank line
// that dispatches its last event; the SDK's chat streams read from the mock end and `text()`
// resolves, in Node and bundled into a page in Chromium; the `openai` package streams chunks and
// `[DONE]`; and a request the mock refuses gets a 400 that names no field it did not send.
import { readFile } from "node:fs/promises";
import type { Server } from "node:http";
import { join } from "node:path";
import { parseWithPointers } from "@stoplight/yaml";
import { createParser } from "eventsource-parser";
import OpenAI from "openai";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type PersonaClient } from "../../sdk/src/index.ts";
import { browserTestRuns, launchChromium } from "../support/browser.ts";
import { operation, operations, root, type Operation } from "../support/contract.ts";
import { freePort } from "../support/ports.ts";
import { startProcess, type RunningProcess } from "../support/processes.ts";
import { sendRaw } from "../support/raw.ts";
import { buildSdkForBrowser, listenOn, sdkPageServer, SDK_IMPORT_MAP } from "../support/sdk-page.ts";

let prism: RunningProcess;
let mockUrl: string;
let client: PersonaClient;
/** The mock as test/support/raw.ts wants a service: a fetch of paths. */
const mock = { fetch: (path: string, init?: RequestInit) => fetch(`${mockUrl}${path}`, init) };

beforeAll(async () => {
  const port = await freePort();
  mockUrl = `http://127.0.0.1:${port}`;
  prism = await startProcess({ bin: "prism", args: ["mock", "generated/openapi.yaml", "--host", "127.0.0.1", "--port", String(port)], url: mockUrl, probe: `${mockUrl}/healthz` });
  // No retries: a mock that answers an error must fail the call at once, not after backoff.
  client = createClient({ baseUrl: mockUrl, apiKey: "pk_mock" }, { maxRetries: 0, timeout: 30_000 });
}, 90_000);

afterAll(async () => {
  await prism?.stop();
});

// ------------------------------------------------------------------ the contract's examples

type Example = Record<string, unknown>;

/** The example of a parameter (path, header), or undefined. */
const parameterExample = (op: Operation, name: string, where: "path" | "header") => op.parameters.find((p) => p.in === where && p.name === name)?.example;

/** The path with its parameters' examples filled in. */
const examplePath = (op: Operation) => op.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(parameterExample(op, name, "path"))));

/** The first example of the operation's JSON body; undefined when it takes none. */
function bodyExample(op: Operation): Example | undefined {
  const media = op.requestBody?.content["application/json"];
  return (media?.example ?? Object.values(media?.examples ?? {})[0]?.value) as Example | undefined;
}

/** The contract's example of the operation's event stream. */
function streamExample(op: Operation): string {
  const example = op.responses["200"]?.content?.["text/event-stream"]?.example;
  if (typeof example !== "string") throw new Error(`${op.operationId}: its event stream has no example`);
  return example;
}

/** The events a conformant parser dispatches from `body`, as the stream ends there (no blank line added). */
function dispatched(body: string): { id?: string; event?: string; data: string }[] {
  const events: { id?: string; event?: string; data: string }[] = [];
  const parser = createParser({ onEvent: (message) => events.push(message) });
  parser.feed(body);
  return events;
}

/** The events written in `body`: its blocks separated by blank lines, comments aside. */
const written = (body: string) => body.split("\n\n").filter((block) => block.split("\n").some((line) => line !== "" && !line.startsWith(":")));

/** The reply a native chat stream example spells out: its deltas, concatenated. */
const replyOf = (op: Operation) =>
  dispatched(streamExample(op))
    .filter((event) => event.event === "delta")
    .map((event) => (JSON.parse(event.data) as { content: string }).content)
    .join("");

const streamOperations = [...operations.values()].filter((op) => op.responses["200"]?.content?.["text/event-stream"]);

// ------------------------------------------------------------------ the tests

describe("the mock's event streams", () => {
  it("Prism's YAML reader reads generated/openapi.yaml as the same document as openapi.json", async () => {
    // @stoplight/yaml is what Prism loads the contract with (through @stoplight/json-schema-ref-parser);
    // it dropped the last line break of a `|+` block, which ended every mocked stream too early.
    const yaml = await readFile(join(root, "generated", "openapi.yaml"), "utf8");
    const json = JSON.parse(await readFile(join(root, "generated", "openapi.json"), "utf8")) as unknown;
    const parsed = parseWithPointers(yaml, { ignoreDuplicateKeys: true, mergeKeys: false });
    expect(parsed.diagnostics.filter((d) => d.severity === 0)).toEqual([]);
    expect(parsed.data).toEqual(json);
  });

  it("covers the contract's event streams, native and OpenAI-compatible", () => {
    const ids = streamOperations.map((op) => op.operationId);
    expect(ids).toEqual(expect.arrayContaining(["conversations_stream_message", "conversation_generations_stream", "conversation_tree_regenerate_stream", "conversation_tree_edit_stream", "rooms_events", "openai_create_chat_completion"]));
  });

  it.each(streamOperations.map((op) => [op.operationId, op] as const))("%s: sends its example as written, its last event dispatched", async (_id, op) => {
    const example = streamExample(op);
    // The contract's example itself ends with the blank line that dispatches its last event.
    expect(example.endsWith("\n\n"), `${op.operationId}: the example ends with a blank line`).toBe(true);
    expect(dispatched(example)).toHaveLength(written(example).length);

    // A credential only where the operation takes one: Prism answers 401 to one sent to an open operation.
    const secured = (op.security ?? []).some((requirement) => Object.keys(requirement).length > 0);
    const headers: Record<string, string> = { ...(secured ? { authorization: "Bearer mock" } : {}), accept: "text/event-stream" };
    for (const p of op.parameters.filter((p) => p.in === "header" && p.example !== undefined)) headers[p.name] = String(p.example);
    // The operation is picked at run time from the contract, so its body cannot be typed here.
    const response = await sendRaw(mock, op.method, examplePath(op), { body: bodyExample(op), headers });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/event-stream");
    expect(await response.text()).toBe(example);
  });

  it("the SDK's chat streams end with done and text() resolves: send, regenerate, edit, resume", async () => {
    const send = operation("conversations_stream_message");
    const id = String(parameterExample(send, "id", "path"));
    const stream = client.conversations.stream(id, bodyExample(send) as { content: string });
    expect(await stream.text()).toBe(replyOf(send));
    expect(stream.finalMessageId).toMatch(/^[0-9a-f-]{36}$/);
    expect(stream.resumes).toBe(0);

    const regenerate = operation("conversation_tree_regenerate_stream");
    const regenerated = client.conversations.regenerateStream(String(parameterExample(regenerate, "id", "path")), String(parameterExample(regenerate, "message_id", "path")));
    expect(await regenerated.text()).toBe(replyOf(regenerate));

    const edit = operation("conversation_tree_edit_stream");
    const edited = client.conversations.editStream(String(parameterExample(edit, "id", "path")), String(parameterExample(edit, "message_id", "path")), bodyExample(edit) as { content: string });
    expect(await edited.text()).toBe(replyOf(edit));

    const resume = operation("conversation_generations_stream");
    const resumed = client.conversations.resume(String(parameterExample(resume, "id", "path")), String(parameterExample(resume, "generation_id", "path")), {
      lastEventId: String(parameterExample(resume, "Last-Event-ID", "header")),
    });
    expect(await resumed.text()).toBe(replyOf(resume));
    expect(resumed.final?.message_id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("the openai package streams chunks from the mock's /openai/v1 and ends at [DONE]", async () => {
    const op = operation("openai_create_chat_completion");
    const openai = new OpenAI({ baseURL: `${mockUrl}/openai/v1`, apiKey: "pk_mock", maxRetries: 0 });
    const request = bodyExample(op) as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;
    // Prism picks the answer by Accept, not by `stream`: the client asks for the event stream.
    const stream = await openai.chat.completions.create({ ...request, stream: true }, { headers: { Accept: "text/event-stream" } });
    const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const expected = dispatched(streamExample(op)).map((event) => event.data);
    expect(expected.at(-1)).toBe("[DONE]");
    expect(chunks).toEqual(expected.slice(0, -1).map((data) => JSON.parse(data) as unknown));
    expect(chunks[0]?.choices[0]?.delta.role).toBe("assistant");
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe("stop");
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? "").join("")).toBe("That's Venus, cadet!");

    // Without it the mock answers the blocking example, as the service would to `stream: false`.
    const whole = await openai.chat.completions.create(request);
    expect(whole.object).toBe("chat.completion");
  });

  it("a request the mock refuses gets the generic 400 in the service's envelope, naming no field", async () => {
    const op = operation("conversations_stream_message");
    const response = await sendRaw(mock, "POST", examplePath(op), { body: { content: 42 }, headers: { authorization: "Bearer mock" } });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { code: string; message: string; details?: unknown } };
    expect(body.error.code).toBe("invalid_request");
    expect(body.error.details).toBeUndefined();
    // What failed is in Prism's own header.
    expect(response.headers.get("sl-violations")).toContain("content");
  });
});

// ------------------------------------------------------------------ in a browser


/** A page that streams a reply from the mock with the SDK's ESM build, from another origin. */
function page(config: { mockUrl: string; conversationId: string; body: Example }): string {
  return `<!doctype html>
<meta charset="utf-8">
<title>Persona SDK against the mock</title>
${SDK_IMPORT_MAP}
<script type="module">
  import { createClient } from "/sdk/index.js";
  const config = ${JSON.stringify(config)};
  const result = (window.__result = {});
  try {
    const client = createClient({ baseUrl: config.mockUrl, apiKey: "pk_mock" }, { maxRetries: 0 });
    const stream = client.conversations.stream(config.conversationId, config.body);
    result.text = await stream.text();
    result.messageId = stream.finalMessageId;
    result.resumes = stream.resumes;
  } catch (error) {
    result.failure = String((error && error.stack) || error);
  }
  result.finished = true;
</script>`;
}

describe.runIf(browserTestRuns("sdk against the mock in a browser"))("the SDK in Chromium against the mock", () => {
  let sdk: Awaited<ReturnType<typeof buildSdkForBrowser>> | undefined;
  let server: Server;
  let origin: string;
  let browser: Browser;

  beforeAll(async () => {
    sdk = await buildSdkForBrowser();
    const send = operation("conversations_stream_message");
    const config = { mockUrl, conversationId: String(parameterExample(send, "id", "path")), body: bodyExample(send)! };
    server = sdkPageServer(sdk.dir, { html: () => page(config) });
    origin = await listenOn(server);
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
    await sdk?.remove();
  });

  it("a streamed reply ends and text() resolves in the page", async () => {
    const tab = await browser.newPage();
    const consoleLines: string[] = [];
    const elsewhere: string[] = [];
    tab.on("console", (message) => consoleLines.push(message.text()));
    tab.on("pageerror", (error) => consoleLines.push(String(error)));
    // The page calls the mock on its own origin (CORS), and nothing else.
    await tab.route("**/*", (route) => {
      const url = route.request().url();
      if (url.startsWith(origin) || url.startsWith(mockUrl)) return route.continue();
      elsewhere.push(url);
      return route.abort();
    });
    try {
      await tab.goto(origin);
      await tab.waitForFunction(() => (window as unknown as { __result?: { finished?: boolean } }).__result?.finished, undefined, { timeout: 60_000 });
      const result = await tab.evaluate(() => (window as unknown as { __result: Record<string, unknown> }).__result);
      expect(result.failure, consoleLines.join("\n")).toBeUndefined();
      expect(result.text).toBe(replyOf(operation("conversations_stream_message")));
      expect(result.messageId).toMatch(/^[0-9a-f-]{36}$/);
      expect(result.resumes).toBe(0);
      expect(elsewhere).toEqual([]);
    } finally {
      await tab.close();
    }
  }, 90_000);
});
