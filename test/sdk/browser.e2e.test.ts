import type { Server } from "node:http";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.ts";
import { browserTestRuns, launchChromium } from "../support/browser.ts";
import { buildSdkForBrowser, listenOn, sdkPageServer, SDK_IMPORT_MAP } from "../support/sdk-page.ts";

// The SDK's ESM build in a real browser (Debian's Chromium, as in test/auth/oauth-browser.e2e.test.ts):
// a page registers, creates a persona and a conversation, and streams a chat reply (issue 13,
// item 7). The service sends no CORS headers, so the page comes from a loopback server that also
// passes /v1 through to the service: one origin, as a web app behind the same host would have it.
// The page resolves the SDK's two dependencies with an import map to their own ESM builds.
const runs = browserTestRuns("sdk browser test");


const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>Persona SDK in a browser</title>
${SDK_IMPORT_MAP}
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

describe.runIf(runs)("the SDK in a browser", () => {
  let service: TestService;
  let sdk: Awaited<ReturnType<typeof buildSdkForBrowser>> | undefined;
  let server: Server;
  let origin: string;
  let browser: Browser;

  beforeAll(async () => {
    sdk = await buildSdkForBrowser();
    service = await startTestService();
    server = sdkPageServer(sdk.dir, { html: () => PAGE, passPrefix: "/v1/", passTo: service.url });
    origin = await listenOn(server);
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
    await service?.close();
    await sdk?.remove();
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
