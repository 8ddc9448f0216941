import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { build } from "esbuild";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { root } from "../support/contract.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { browserTestRuns, launchChromium } from "../support/browser.ts";

// CORS in a real browser (issue 35, item 7; ADR 0306): the SDK's ESM build, and the `openai`
// package bundled for the browser, in pages served from another loopback origin
// (http://localhost:<port>) than the API's (http://127.0.0.1:<port>). From the origin in
// CORS_ORIGINS the SDK signs up, creates a persona, streams a reply and reads the headers CORS
// exposes, and the openai package streams from /openai/v1; from an origin not listed the browser
// refuses the first call, which the SDK reports as a ConnectionError.
const runs = browserTestRuns("sdk cors browser test");

const run = promisify(execFile);

const page = (api: string) => `<!doctype html>
<meta charset="utf-8">
<title>Persona SDK from another origin</title>
<script type="importmap">
  { "imports": { "openapi-fetch": "/modules/openapi-fetch.js", "eventsource-parser": "/modules/eventsource-parser.js" } }
</script>
<script type="module">
  import { createClient, ConnectionError, PersonaError } from "/sdk/index.js";
  import { OpenAI } from "/modules/openai.js";
  const api = ${JSON.stringify(api)};
  const result = (window.__result = { events: [], reply: "", openaiReply: "" });
  try {
    const suffix = Math.random().toString(36).slice(2, 10);
    result.username = "cors_" + suffix;
    const session = await createClient({ baseUrl: api }).auth.register({
      email: "cors_" + suffix + "@example.com", username: "cors_" + suffix, password: "Correct-horse-9",
    });
    const client = createClient({ baseUrl: api, accessToken: session.access_token, refreshToken: session.refresh_token });
    const created = await client.personas.create({ name: "Captain Nova", instructions: "You are Captain Nova. Answer in one sentence." }).withResponse();
    result.requestId = created.requestId;
    result.rateLimit = created.rateLimit ? created.rateLimit.limit : null;
    const conversation = await client.conversations.create({ persona_id: created.data.id });
    const stream = client.conversations.stream(conversation.id, { content: "Hello from another origin!" });
    for await (const event of stream) {
      result.events.push(event.type);
      if (event.type === "delta") result.reply += event.content;
    }
    try {
      await client.conversations.get("0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01");
    } catch (error) {
      result.error = [error instanceof PersonaError, error.status, error.code, typeof error.requestId];
    }
    const openai = new OpenAI({ baseURL: api + "/openai/v1", apiKey: session.access_token, dangerouslyAllowBrowser: true, maxRetries: 0 });
    const chunks = await openai.chat.completions.create({ model: created.data.id, stream: true, messages: [{ role: "user", content: "Hello through the OpenAI door!" }] });
    for await (const chunk of chunks) result.openaiReply += chunk.choices[0]?.delta?.content ?? "";
  } catch (error) {
    result.failure = { connectionError: error instanceof ConnectionError, name: error && error.name, message: String(error && error.stack || error) };
  }
  result.finished = true;
</script>`;

/** Serves the page (calling the API at `api()`), the SDK build, its dependencies and the bundled openai package. */
function pageServer(sdkDir: string, openaiBundle: string, api: () => string): Server {
  const files: Record<string, [string, string]> = {
    "/sdk/index.js": [join(sdkDir, "index.js"), "text/javascript"],
    "/sdk/index.js.map": [join(sdkDir, "index.js.map"), "application/json"],
    "/modules/openapi-fetch.js": [join(root, "node_modules/openapi-fetch/dist/index.mjs"), "text/javascript"],
    "/modules/eventsource-parser.js": [join(root, "node_modules/eventsource-parser/dist/index.js"), "text/javascript"],
  };
  return createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://page").pathname;
    if (path === "/") return void res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(page(api()));
    if (path === "/modules/openai.js") return void res.writeHead(200, { "content-type": "text/javascript" }).end(openaiBundle);
    const file = files[path];
    if (!file) return void res.writeHead(404).end();
    readFile(file[0]).then(
      (body) => res.writeHead(200, { "content-type": file[1] }).end(body),
      () => res.writeHead(500).end(),
    );
  });
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  // The page's origin names the host `localhost`: another origin than the API's 127.0.0.1.
  return `http://localhost:${(server.address() as AddressInfo).port}`;
}

describe.runIf(runs)("the SDK in a browser page on another origin", () => {
  let service: TestService;
  let sdkDir: string;
  let allowedServer: Server;
  let refusedServer: Server;
  let allowed: string;
  let refused: string;
  let browser: Browser;

  beforeAll(async () => {
    sdkDir = await mkdtemp(join(tmpdir(), "persona-sdk-cors-"));
    await run(process.execPath, [join(root, "sdk", "build.mjs"), "--out", sdkDir, "--esm-only"]);
    // The openai package as a browser app bundles it.
    const bundled = await build({
      stdin: { contents: 'export { OpenAI } from "openai";', resolveDir: root, loader: "js" },
      bundle: true,
      platform: "browser",
      format: "esm",
      target: "es2022",
      write: false,
      logLevel: "warning",
    });
    const openaiBundle = bundled.outputFiles[0]!.text;
    // The page servers listen before the service starts: the allowed origin names their port.
    allowedServer = pageServer(sdkDir, openaiBundle, () => service.url);
    refusedServer = pageServer(sdkDir, openaiBundle, () => service.url);
    [allowed, refused] = await Promise.all([listen(allowedServer), listen(refusedServer)]);
    service = await startTestService({ env: { CORS_ORIGINS: allowed } });
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    for (const server of [allowedServer, refusedServer]) await new Promise((resolve) => server?.close(resolve));
    await service?.close();
    if (sdkDir) await rm(sdkDir, { recursive: true, force: true });
  });

  /** Opens the page of `origin` and answers what it recorded, with the browser's console. */
  async function visit(origin: string) {
    const tab = await browser.newPage();
    const consoleLines: string[] = [];
    const elsewhere: string[] = [];
    tab.on("console", (message) => consoleLines.push(message.text()));
    tab.on("pageerror", (error) => consoleLines.push(String(error)));
    // The page reaches its own origin and the API, nothing else. Watched, not intercepted: with a
    // route set, Playwright answers CORS preflights itself and the service would never see them.
    tab.on("request", (request) => {
      const url = request.url();
      if (!url.startsWith(`${origin}/`) && !url.startsWith(`${service.url}/`)) elsewhere.push(url);
    });
    try {
      await tab.goto(origin);
      await tab.waitForFunction(() => (window as unknown as { __result?: { finished?: boolean } }).__result?.finished, undefined, { timeout: 60_000 });
      const result = await tab.evaluate(() => (window as unknown as { __result: Record<string, unknown> }).__result);
      return { result, console: consoleLines.join("\n"), elsewhere };
    } finally {
      await tab.close();
    }
  }

  it("from the origin in CORS_ORIGINS: signs up, creates a persona, streams a reply, reads the exposed headers and streams through the openai package", async () => {
    const { result, console, elsewhere } = await visit(allowed);
    expect(result.failure, console).toBeUndefined();
    const events = result.events as string[];
    expect(events.at(-1)).toBe("done");
    expect(events.filter((type) => type === "delta").length).toBeGreaterThan(0);
    expect((result.reply as string).length).toBeGreaterThan(0);
    // X-Request-Id and X-RateLimit-* are readable: CORS exposes them.
    expect(result.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(result.rateLimit).toBeGreaterThan(0);
    expect(result.error).toEqual([true, 404, "not_found", "string"]);
    expect((result.openaiReply as string).length).toBeGreaterThan(0);
    expect(elsewhere).toEqual([]);
  }, 90_000);

  it("from an origin not listed: the browser refuses the first call and the SDK reports a ConnectionError", async () => {
    const { result, console, elsewhere } = await visit(refused);
    expect(result.failure, console).toMatchObject({ connectionError: true, name: "ConnectionError" });
    expect(console).toMatch(/CORS policy/);
    // The preflight was refused: the sign-up never reached the service.
    expect(await service.services.db.knex("users").where({ username: result.username })).toEqual([]);
    expect(elsewhere).toEqual([]);
  }, 90_000);
});
