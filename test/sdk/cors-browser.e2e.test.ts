import type { Server } from "node:http";
import { build } from "esbuild";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { root } from "../support/contract.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { browserTestRuns, launchChromium } from "../support/browser.ts";
import { buildSdkForBrowser, listenOn, sdkPageServer, SDK_IMPORT_MAP } from "../support/sdk-page.ts";

// CORS in a real browser (issue 35, item 7; ADR 0306): the SDK's ESM build, and the `openai`
// package bundled for the browser, in pages served from another loopback origin
// (http://localhost:<port>) than the API's (http://127.0.0.1:<port>). From the origin in
// CORS_ORIGINS the SDK signs up, creates a persona, streams a reply and reads the headers CORS
// exposes, and the openai package streams from /openai/v1; from an origin not listed the browser
// refuses the first call, which the SDK reports as a ConnectionError.
const runs = browserTestRuns("sdk cors browser test");


const page = (api: string) => `<!doctype html>
<meta charset="utf-8">
<title>Persona SDK from another origin</title>
${SDK_IMPORT_MAP}
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

describe.runIf(runs)("the SDK in a browser page on another origin", () => {
  let service: TestService;
  let sdk: Awaited<ReturnType<typeof buildSdkForBrowser>> | undefined;
  let allowedServer: Server;
  let refusedServer: Server;
  let allowed: string;
  let refused: string;
  let browser: Browser;

  beforeAll(async () => {
    sdk = await buildSdkForBrowser();
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
    // The page names the API at 127.0.0.1 and is served from `localhost`: another origin.
    const pageOptions = { html: () => page(service.url), extra: { "/modules/openai.js": { body: () => openaiBundle, type: "text/javascript" } } };
    allowedServer = sdkPageServer(sdk.dir, pageOptions);
    refusedServer = sdkPageServer(sdk.dir, pageOptions);
    [allowed, refused] = await Promise.all([listenOn(allowedServer, "localhost"), listenOn(refusedServer, "localhost")]);
    service = await startTestService({ env: { CORS_ORIGINS: allowed } });
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    for (const server of [allowedServer, refusedServer]) await new Promise((resolve) => server?.close(resolve));
    await service?.close();
    await sdk?.remove();
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
