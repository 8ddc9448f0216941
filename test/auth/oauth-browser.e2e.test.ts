import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerOAuthClient, type RegisteredClient } from "../../server/areas/auth/oauth/clients.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { browserTestRuns, launchChromium } from "../support/browser.ts";

// The consent page driven by a real browser (Debian's Chromium; scripts/ci/chromium.sh installs
// it in CI): what a person sees and clicks must end at the client app with a code and the state.
const runs = browserTestRuns("oauth-browser");

describe.runIf(runs)("the consent page in a browser", () => {
  let service: TestService;
  let user: TestUser;
  let client: RegisteredClient;
  let app: Server;
  let redirectUri: string;
  let browser: Browser;
  const received: URL[] = [];

  beforeAll(async () => {
    // The "client app": records the query its callback is called with.
    app = createServer((req, res) => {
      const url = new URL(req.url ?? "/", redirectUri);
      if (url.pathname === "/callback") received.push(url); // not the browser's favicon request
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end("<!doctype html><title>Client app</title><p>Signed in.</p>");
    });
    await new Promise<void>((resolve) => app.listen(0, "127.0.0.1", resolve));
    redirectUri = `http://127.0.0.1:${(app.address() as AddressInfo).port}/callback`;

    service = await startTestService();
    user = await registerUser(service);
    client = await registerOAuthClient(service.services, { name: "Browser Test App", redirectUris: [redirectUri] });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await service?.close();
    await new Promise((resolve) => app?.close(resolve));
  });

  it("signs in, approves, and lands on the client's redirect_uri with code and state", async () => {
    const state = "browser-state-42";
    const query = new URLSearchParams({ response_type: "code", client_id: client.client_id, redirect_uri: redirectUri, scope: "personas:read", state });
    const page = await browser.newPage();
    const consoleLines: string[] = [];
    page.on("console", (message) => consoleLines.push(message.text()));
    try {
      const opened = await page.goto(`${service.url}/v1/oauth/authorize?${query.toString().replace(/\+/g, "%20")}`);
      expect(opened?.status()).toBe(200);
      await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toContain("Browser Test App");

      await page.getByLabel("E-mail").fill(user.email);
      await page.getByLabel("Password").fill(user.password);
      await Promise.all([page.waitForURL((url) => url.toString().startsWith(redirectUri)), page.getByRole("button", { name: "Approve" }).click()]);
      await expect(page.locator("p").textContent()).resolves.toBe("Signed in.");
    } catch (error) {
      throw new Error(`${String(error)}\nbrowser console:\n${consoleLines.join("\n")}`, { cause: error });
    } finally {
      await page.close();
    }

    expect(received).toHaveLength(1);
    const callback = received[0]!;
    expect(`${callback.origin}${callback.pathname}`).toBe(redirectUri);
    expect(callback.searchParams.get("state")).toBe(state);
    const code = callback.searchParams.get("code");
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);

    // The code the browser carried is a real one.
    const exchanged = await service.api.POST("/v1/oauth/token", {
      body: { grant_type: "authorization_code", code: code!, redirect_uri: redirectUri, client_id: client.client_id, client_secret: client.client_secret },
    });
    expect(exchanged.response.status).toBe(200);
    expect(exchanged.data!.scope).toBe("personas:read");
  });
});
