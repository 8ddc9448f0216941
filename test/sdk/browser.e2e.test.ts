import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { root } from "../support/contract.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { browserTestRuns, launchChromium } from "../support/browser.ts";

// The SDK's ESM build in a real browser (Debian's Chromium, as in test/auth/oauth-browser.e2e.test.ts):
// a page registers, creates a persona and a conversation, and streams a chat reply (issue 13,
// item 7). The service sends no CORS headers, so the page comes from a loopback server that also
// passes /v1 through to the service: one origin, as a web app behind the same host would have it.
// The page resolves the SDK's two dependencies with an import map to their own ESM builds.
const runs = browserTestRuns("sdk browser test");

const run = promisify(execFile);

const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>Persona SDK in a browser</title>
<script type="importmap">
  { "imports": { "openapi-fetch": "/modules/openapi-fetch.js", "eventsource-parser": "/modules/eventsource-parser.js" } }
</script>
<script type="module">
  import { createClient, PersonaError } from "/sdk/index.js";
  const result = (window.__result = { events: [], reply: "" });
  try {
    const suffix = Math.random().toString(36).slice(2, 10);
    const session = await createClient({ baseUrl: location.origin }).auth.register({
      email: "browser_" + suffix + "@example.com", username: "browser_" + suffix, password: "Correct-horse-9",
    });
    const client = createClient({ baseUrl: location.origin, accessToken: session.access_token, refreshToken: session.refresh_token });
    const persona = await client.personas.create({ name: "Captain Nova", instructions: "You are Captain Nova. Answer in one sentence." });
    const conversation = await client.conversations.create({ persona_id: persona.id });
    const stream = client.conversations.stream(conversation.id, { content: "Hello from the browser!" });
    for await (const event of stream) {
      result.events.push(event.type);
      if (event.type === "delta") result.reply += event.content;
    }
    result.messageId = stream.finalMessageId;
    try {
      await client.conversations.get("0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01");
    } catch (error) {
      result.error = [error instanceof PersonaError, error.status, error.code];
    }
  } catch (error) {
    result.failure = String(error && error.stack || error);
  }
  result.finished = true;
</script>`;

/** Serves the page, the SDK build and its dependencies, and passes /v1 through to the service. */
function pageServer(sdkDir: string, service: TestService): Server {
  const files: Record<string, [string, string]> = {
    "/sdk/index.js": [join(sdkDir, "index.js"), "text/javascript"],
    "/sdk/index.js.map": [join(sdkDir, "index.js.map"), "application/json"],
    "/modules/openapi-fetch.js": [join(root, "node_modules/openapi-fetch/dist/index.mjs"), "text/javascript"],
    "/modules/eventsource-parser.js": [join(root, "node_modules/eventsource-parser/dist/index.js"), "text/javascript"],
  };
  const upstream = new URL(service.url);
  const passThrough = (req: IncomingMessage, res: ServerResponse) => {
    const forwarded = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forwarded.on("error", () => res.destroy());
    req.pipe(forwarded);
  };
  return createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://page").pathname;
    if (path.startsWith("/v1/")) return passThrough(req, res);
    if (path === "/") return void res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(PAGE);
    const file = files[path];
    if (!file) return void res.writeHead(404).end();
    readFile(file[0]).then(
      (body) => res.writeHead(200, { "content-type": file[1] }).end(body),
      () => res.writeHead(500).end(),
    );
  });
}

describe.runIf(runs)("the SDK in a browser", () => {
  let service: TestService;
  let sdkDir: string;
  let server: Server;
  let origin: string;
  let browser: Browser;

  beforeAll(async () => {
    sdkDir = await mkdtemp(join(tmpdir(), "persona-sdk-esm-"));
    await run(process.execPath, [join(root, "sdk", "build.mjs"), "--out", sdkDir, "--esm-only"]);
    service = await startTestService();
    server = pageServer(sdkDir, service);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
    await service?.close();
    if (sdkDir) await rm(sdkDir, { recursive: true, force: true });
  });

  it("registers, creates a persona and a conversation, and streams a reply from the page", async () => {
    const page = await browser.newPage();
    const consoleLines: string[] = [];
    const elsewhere: string[] = [];
    page.on("console", (message) => consoleLines.push(message.text()));
    page.on("pageerror", (error) => consoleLines.push(String(error)));
    // Everything the page loads or calls comes from its own origin.
    await page.route("**/*", (route) => (route.request().url().startsWith(origin) ? route.continue() : (elsewhere.push(route.request().url()), route.abort())));
    try {
      await page.goto(origin);
      await page.waitForFunction(() => (window as unknown as { __result?: { finished?: boolean } }).__result?.finished, undefined, { timeout: 60_000 });
      const result = await page.evaluate(() => (window as unknown as { __result: Record<string, unknown> }).__result);
      expect(result.failure, consoleLines.join("\n")).toBeUndefined();
      const events = result.events as string[];
      expect(events.at(-1)).toBe("done");
      expect(events.filter((type) => type === "delta").length).toBeGreaterThan(0);
      expect((result.reply as string).length).toBeGreaterThan(0);
      expect(result.messageId).toMatch(/^[0-9a-f-]{36}$/);
      expect(result.error).toEqual([true, 404, "not_found"]);
      expect(elsewhere).toEqual([]);
    } finally {
      await page.close();
    }
    // The reply the page streamed is stored, as for any other client (after the greeting, which
    // the conversation stored when it was made).
    const stored = await service.services.db.knex("messages").where({ role: "assistant" }).where("depth", ">", 0);
    expect(stored).toHaveLength(1);
  }, 90_000);
});
