import { mkdir, readFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Frame, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { abortError, type ChatModelProvider, type ChatRequest, type ChatStreamChunk } from "../../server/toolkit/providers/llm/types.ts";
import { expectOk } from "../support/assertions.ts";
import { root } from "../support/contract.ts";
import { browserTestRuns, launchChromium } from "../support/browser.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { until } from "../support/wait.ts";

// The embeddable persona in Chromium (issue 36 item 3): a shop's page on an allowed loopback origin
// (http://localhost:<port>, the service being http://127.0.0.1:<port>) with the snippet gets a chat
// bubble whose chat shows the greeting, streams a reply rendered as safe markdown, stops a reply,
// speaks one; a page on another origin gets the bubble but the browser refuses the chat's frame
// (frame-ancestors) and the service refuses its API calls (403). The persona's hostile texts run
// no script in the chat or in the shop's page. axe-core finds no serious violation in the chat,
// and the chat's first paint on loopback is printed.
const runs = browserTestRuns("embed browser test");

const SCREENSHOTS = join(tmpdir(), "persona-embed-screenshots");
const VIEWPORTS = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } } as const;

/** Script-running text in every place the persona's owner or its model writes. */
const HOSTILE = `<img src=x onerror="window.hacked=1;parent.hacked=1"><script>window.hacked=2</script>`;
const REPLY = [
  "Hello **there**, see [the docs](https://docs.example/ship) ",
  `and [this](javascript:window.hacked=3) ${HOSTILE}\n\n- one\n- two\n\n\`code\``,
];

/**
 * A model whose replies the test chooses by the visitor's words: "slow" holds its reply open until
 * it is stopped; anything else answers REPLY in two chunks. Titles and greetings get short answers.
 */
class ShopModel implements ChatModelProvider {
  readonly name = "shop";
  async complete() {
    return { content: "A visitor", model: "shop-1", usage: { inputTokens: 1, outputTokens: 1 } };
  }
  async *stream(request: ChatRequest): AsyncIterable<ChatStreamChunk> {
    const last = request.messages.at(-1)?.content ?? "";
    if (typeof last === "string" && last.includes("slow")) {
      yield { type: "delta", content: "Once upon " };
      yield { type: "delta", content: "a time" };
      const signal = request.signal;
      if (signal && !signal.aborted) await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      throw abortError(signal ?? new AbortController().signal);
    }
    for (const content of REPLY) {
      await new Promise((resolve) => setTimeout(resolve, 40));
      yield { type: "delta", content };
    }
    yield { type: "usage", usage: { inputTokens: 5, outputTokens: 5 } };
  }
}

interface AxeResult {
  violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[];
  passes: unknown[];
}

/** A shop's page with the snippet (`/`) or the <iframe> form (`/framed`), naming the service's embed. */
function shopServer(embed: () => { service: string; persona: string }): Server {
  return createServer((req, res) => {
    const { service, persona } = embed();
    const path = new URL(req.url ?? "/", "http://shop").pathname;
    const body =
      path === "/" ? `<script src="${service}/embed.js" data-persona="${persona}" async></script>`
      : path === "/framed" ? `<iframe src="${service}/embed/${persona}" title="Chat with our assistant" width="380" height="560"></iframe>`
      : undefined;
    if (!body) return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>A shop</title></head>
<body><main><h1>A shop</h1><p>Things for sale.</p>${body}</main></body></html>`);
  });
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  // `localhost`: another origin than the service's 127.0.0.1.
  return `http://localhost:${(server.address() as AddressInfo).port}`;
}

describe.runIf(runs)("an embedded persona in a browser", () => {
  let service: TestService;
  let browser: Browser;
  let axeSource: string;
  let owner: TestUser;
  let personaId = "";
  let allowedServer: Server;
  let refusedServer: Server;
  let allowed: string;
  let refused: string;

  beforeAll(async () => {
    allowedServer = shopServer(() => ({ service: service.url, persona: personaId }));
    refusedServer = shopServer(() => ({ service: service.url, persona: personaId }));
    [allowed, refused] = await Promise.all([listen(allowedServer), listen(refusedServer)]);
    service = await startTestService({ providers: { llm: new ShopModel() }, env: { DEFAULT_PLAN: "creator" } });
    axeSource = await readFile(join(root, "node_modules/axe-core/axe.min.js"), "utf8");
    await mkdir(SCREENSHOTS, { recursive: true });
    browser = await launchChromium();
    owner = await registerUser(service);
    const persona = await expectOk(service.clientFor(owner).POST("/v1/personas", {
      body: {
        name: `Shopkeeper ${HOSTILE}`.slice(0, 80),
        instructions: "You sell things.",
        description: `About ${HOSTILE}`,
        greeting_message: `Welcome, {{user}}! Ask me anything. ${HOSTILE}`,
        is_public: true,
      },
    }), 201);
    personaId = persona.id;
    await expectOk(service.clientFor(owner).PUT("/v1/personas/{id}/embed", { params: { path: { id: personaId } }, body: { enabled: true, allowed_origins: [allowed] } }));
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await service?.close();
    await Promise.all([allowedServer, refusedServer].map((server) => server && new Promise((resolve) => server.close(resolve))));
  });

  /** A fresh page of the shop at `origin`, recording console lines, page errors, dialogs and requests. */
  async function shop(origin: string, path = "/", viewport: { width: number; height: number } = VIEWPORTS.desktop) {
    const context = await browser.newContext({ viewport, deviceScaleFactor: 1 });
    const page = await context.newPage();
    const console: string[] = [];
    const dialogs: string[] = [];
    const requests: string[] = [];
    page.on("console", (message) => console.push(`${message.type()}: ${message.text()}`));
    page.on("pageerror", (error) => console.push(`pageerror: ${String(error)}`));
    page.on("dialog", (dialog) => void (dialogs.push(dialog.message()), dialog.dismiss()));
    page.on("request", (request) => requests.push(request.url()));
    await page.goto(`${origin}${path}`, { waitUntil: "load" });
    return { context, page, console, dialogs, requests };
  }

  /** Opens the bubble and answers the chat's frame once its page has loaded. */
  async function openChat(page: Page): Promise<Frame> {
    const bubble = page.locator("[data-persona-embed] button.bubble");
    await bubble.click();
    await expect(bubble.getAttribute("aria-expanded")).resolves.toBe("true");
    const frame = await until("the chat's frame", async () => page.frames().find((candidate) => candidate.url().startsWith(`${service.url}/embed/`)));
    await frame.waitForSelector("#message");
    return frame;
  }

  async function axe(frame: Frame): Promise<AxeResult["violations"]> {
    await frame.evaluate(axeSource);
    const result = await frame.evaluate(() => (window as unknown as { axe: { run: (options: unknown) => Promise<AxeResult> } }).axe.run({ resultTypes: ["violations"] }));
    expect(result.passes.length).toBeGreaterThan(10);
    return result.violations.filter((violation) => violation.impact === "serious" || violation.impact === "critical");
  }

  const hacked = (where: Page | Frame) => where.evaluate(() => (window as unknown as { hacked?: unknown }).hacked);

  it("on an allowed origin: the bubble opens the chat, greeting first; a reply streams as safe markdown; stop keeps what was said; a reply is spoken", async () => {
    const { context, page, console, dialogs, requests } = await shop(allowed);
    try {
      const chat = await openChat(page);
      // The greeting, first, as text: the hostile markup is letters on the screen.
      const greeting = chat.locator(".msg.assistant .text").first();
      await expect(greeting.textContent()).resolves.toBe(`Welcome, you! Ask me anything. ${HOSTILE}`);
      await expect(chat.locator("h1").textContent()).resolves.toBe(`Shopkeeper ${HOSTILE}`.slice(0, 80));

      // A streamed reply.
      const streamed = page.waitForResponse((response) => response.url().endsWith(`/v1/embed/${personaId}/messages/stream`));
      await chat.locator("#message").fill("What do you sell?");
      await chat.locator("#message").press("Enter");
      const answer = await streamed;
      expect(answer.status()).toBe(200);
      expect(answer.headers()["content-type"]).toMatch(/^text\/event-stream/);
      const reply = chat.locator(".msg.assistant").nth(1);
      await reply.locator("button.listen").waitFor();
      await expect(chat.locator(".msg.user .text").textContent()).resolves.toBe("What do you sell?");
      await expect(reply.locator("strong").textContent()).resolves.toBe("there");
      const link = reply.locator("a");
      await expect(link.count()).resolves.toBe(1);
      await expect(link.getAttribute("href")).resolves.toBe("https://docs.example/ship");
      await expect(link.getAttribute("rel")).resolves.toContain("noopener");
      await expect(reply.locator("li").count()).resolves.toBe(2);
      await expect(reply.locator("code").textContent()).resolves.toBe("code");
      await expect(reply.textContent()).resolves.toContain("[this](javascript:window.hacked=3)");
      await expect(reply.textContent()).resolves.toContain(HOSTILE);
      await expect(chat.locator("img:not(.avatar), .log script").count()).resolves.toBe(0);

      // Stop: the reply holds open until the stop button is pressed; what it had said stays.
      await chat.locator("#message").fill("Tell me a slow story");
      await chat.locator("#message").press("Enter");
      const slow = chat.locator(".msg.assistant").nth(2);
      await until("the slow reply's words", async () => (await slow.textContent())?.includes("Once upon a time"));
      await expect(chat.locator("#stop").isVisible()).resolves.toBe(true);
      await chat.locator("#stop").click();
      await slow.locator(".note").waitFor();
      await expect(slow.locator(".note").textContent()).resolves.toBe("Stopped.");
      await expect(chat.locator("#send").isVisible()).resolves.toBe(true);
      await page.screenshot({ path: join(SCREENSHOTS, "embed-conversation-desktop.png") });

      // The first reply in the persona's voice.
      const spoken = page.waitForResponse((response) => response.url().endsWith(`/v1/embed/${personaId}/speech`));
      await reply.locator("button.listen").click();
      const audio = await spoken;
      expect(audio.status()).toBe(200);
      expect(audio.headers()["content-type"]).toBe("audio/mpeg");

      // Nothing hostile ran, in the chat or in the shop's page; nothing was refused by the chat's policy.
      expect(await hacked(chat)).toBeUndefined();
      expect(await hacked(page)).toBeUndefined();
      expect(dialogs).toEqual([]);
      expect(console.filter((line) => /Content Security Policy|Refused to|pageerror/i.test(line))).toEqual([]);
      // The would-be image was never asked for; everything came from the shop or the service.
      expect(requests.filter((url) => url.endsWith("/x"))).toEqual([]);
      expect(requests.filter((url) => !url.startsWith(allowed) && !url.startsWith(service.url) && !url.startsWith("blob:"))).toEqual([]);

      // The owner sees the visitor's conversation.
      const listed = await expectOk(service.clientFor(owner).GET("/v1/personas/{id}/embed/conversations", { params: { path: { id: personaId } } }));
      expect(listed.data[0]).toMatchObject({ visitor_messages: 2 });

      // Reopened, the chat shows the conversation so far (the visitor's token is kept in the chat's storage).
      await page.reload({ waitUntil: "load" });
      const again = await openChat(page);
      await until("the conversation so far", async () => (await again.locator(".msg.user").count()) === 2);
      await expect(again.locator(".msg.user .text").first().textContent()).resolves.toBe("What do you sell?");
    } finally {
      await context.close();
    }
  }, 90_000);

  it("is keyboard-usable, passes axe-core with no serious violation, and paints fast; screenshots at desktop and phone widths", async () => {
    for (const [size, viewport] of Object.entries(VIEWPORTS)) {
      const { context, page } = await shop(allowed, "/", viewport);
      try {
        const bubble = page.locator("[data-persona-embed] button.bubble");
        await bubble.focus();
        await page.keyboard.press("Enter");
        const chat = await until("the chat's frame", async () => page.frames().find((frame) => frame.url().startsWith(`${service.url}/embed/`)));
        await chat.waitForSelector("#message");
        const paint = await chat.evaluate(() => {
          const entries = performance.getEntriesByType("paint").map((entry) => [entry.name, Math.round(entry.startTime)]);
          const navigation = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming | undefined;
          return { ...Object.fromEntries(entries), responseEnd: Math.round(navigation?.responseEnd ?? 0), domContentLoaded: Math.round(navigation?.domContentLoadedEventEnd ?? 0) };
        });
        console.info(`embed chat at ${size} width on loopback: ${JSON.stringify(paint)} (ms from the frame's navigation start)`);
        expect(paint["first-contentful-paint"]).toBeGreaterThan(0);

        const violations = await axe(chat);
        expect(violations, JSON.stringify(violations, null, 1)).toEqual([]);
        // Fluid: the chat fits its frame.
        await expect(chat.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).resolves.toBe(true);
        const box = await page.locator("[data-persona-embed] iframe").boundingBox();
        if (size === "phone") expect(box).toMatchObject({ x: 0, y: 0, width: viewport.width, height: viewport.height });
        else expect(box!.width).toBeLessThanOrEqual(380);
        await page.screenshot({ path: join(SCREENSHOTS, `embed-${size}.png`) });

        // Escape in the chat closes it, and the focus goes back to the bubble.
        await chat.locator("#message").focus();
        await page.keyboard.press("Escape");
        await expect(bubble.getAttribute("aria-expanded")).resolves.toBe("false");
        await expect(page.locator("[data-persona-embed] .panel").isHidden()).resolves.toBe(true);
      } finally {
        await context.close();
      }
    }
  }, 90_000);

  it("as an <iframe> of the shop's own page on an allowed origin: the greeting shows and a reply comes", async () => {
    const { context, page } = await shop(allowed, "/framed");
    try {
      const chat = await until("the chat's frame", async () => page.frames().find((frame) => frame.url().startsWith(`${service.url}/embed/`)));
      await chat.waitForSelector("#message");
      await expect(chat.locator(".msg.assistant .text").first().textContent()).resolves.toContain("Welcome, you!");
      await expect(chat.locator("#close").isHidden()).resolves.toBe(true);
      await chat.locator("#message").fill("Hi");
      await chat.locator("#send").click();
      await chat.locator(".msg.assistant button.listen").waitFor();
    } finally {
      await context.close();
    }
  }, 60_000);

  it("on another origin: the browser refuses the chat's frame, and the service refuses the page's own calls", async () => {
    const { context, page, console } = await shop(refused);
    try {
      await page.locator("[data-persona-embed] button.bubble").click();
      await until("the frame-ancestors refusal", async () => console.some((line) => /frame-ancestors/.test(line)));
      const frames = page.frames().filter((frame) => frame !== page.mainFrame());
      for (const frame of frames) expect(await frame.locator("#chat").count().catch(() => 0)).toBe(0);

      // The page's own call to the guest operations: the browser sends its Origin, the service answers
      // 403 (read here as the network saw it: a page of another origin may not read the answer itself).
      const answered = page.waitForResponse((response) => response.url().endsWith(`/v1/embed/${personaId}/guests`));
      await page.evaluate((url) => fetch(url, { method: "POST", mode: "no-cors" }).catch(() => undefined), `${service.url}/v1/embed/${personaId}/guests`);
      const refusal = await answered;
      expect(refusal.status()).toBe(403);
      expect(await hacked(page)).toBeUndefined();
    } finally {
      await context.close();
    }
  }, 60_000);

  it("opened as a page of its own rather than in a frame, the chat refuses", async () => {
    const context: BrowserContext = await browser.newContext();
    try {
      const page = await context.newPage();
      const response = await page.goto(`${service.url}/embed/${personaId}`);
      expect(response!.status()).toBe(403);
      await expect(page.locator("#chat").count()).resolves.toBe(0);
    } finally {
      await context.close();
    }
  }, 60_000);
});
