import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectApiError, expectOk } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { browserTestRuns, launchChromium } from "../support/browser.ts";

// The offline provider's checkout page driven by a real browser (Debian's Chromium, as the OAuth
// consent page's test): what a person sees and clicks must end at the app's return address, with
// the subscription started by Pay and nothing started by Cancel.
const runs = browserTestRuns("checkout-browser");

describe.runIf(runs)("the local checkout page in a browser", () => {
  let service: TestService;
  let app: Server;
  let appUrl: string;
  let browser: Browser;
  const received: URL[] = [];

  beforeAll(async () => {
    // The "app" the buyer returns to.
    app = createServer((req, res) => {
      const url = new URL(req.url ?? "/", appUrl);
      if (url.pathname.startsWith("/billing/")) received.push(url);
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(`<!doctype html><title>App</title><p>${url.pathname === "/billing/success" ? "Thanks!" : "Maybe later."}</p>`);
    });
    await new Promise<void>((resolve) => app.listen(0, "127.0.0.1", resolve));
    appUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
    service = await startTestService({ env: { AUTO_AVATARS: "false" } });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await service?.close();
    await new Promise((resolve) => app?.close(resolve));
  });

  async function startCheckout(user: TestUser) {
    return expectOk(
      service.clientFor(user).POST("/v1/billing/checkout", {
        body: { plan: "pro", interval: "year", success_url: `${appUrl}/billing/success?from=persona`, cancel_url: `${appUrl}/billing/cancelled` },
      }),
    );
  }

  async function click(url: string, button: "Pay" | "Cancel", landing: string): Promise<string> {
    const page = await browser.newPage();
    const consoleLines: string[] = [];
    page.on("console", (message) => consoleLines.push(message.text()));
    try {
      const opened = await page.goto(url);
      expect(opened?.status()).toBe(200);
      await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Pro, yearly: 199.90 USD");
      await Promise.all([page.waitForURL((at) => at.toString().startsWith(landing)), page.getByRole("button", { name: button }).click()]);
      return (await page.locator("p").textContent()) ?? "";
    } catch (error) {
      throw new Error(`${String(error)}\nbrowser console:\n${consoleLines.join("\n")}`, { cause: error });
    } finally {
      await page.close();
    }
  }

  it("Cancel returns to the app's cancel address and starts nothing; Pay returns to the success address with the subscription active", async () => {
    const user = await registerUser(service);
    const session = await startCheckout(user);

    expect(await click(session.checkout_url, "Cancel", `${appUrl}/billing/cancelled`)).toBe("Maybe later.");
    await expectApiError(service.clientFor(user).GET("/v1/billing/subscription"), 404, "not_found");

    expect(await click(session.checkout_url, "Pay", `${appUrl}/billing/success`)).toBe("Thanks!");
    expect(received.map((url) => `${url.pathname}${url.search}`)).toEqual(["/billing/cancelled", "/billing/success?from=persona"]);
    expect(await expectOk(service.clientFor(user).GET("/v1/billing/subscription"))).toMatchObject({ plan: "pro", interval: "year", status: "active" });
    expect((await expectOk(service.clientFor(user).GET("/v1/billing/usage"))).usage.personas_limit).toBe(50);
  });
});
