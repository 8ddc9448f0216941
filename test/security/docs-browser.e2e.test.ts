import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.ts";
import { browserTestRuns, launchChromium } from "../support/browser.ts";

// The API reference (`GET /docs`, Redoc) under its Content-Security-Policy, in a real browser
// (Debian's Chromium, as the consent and checkout pages' tests): the page must render and search
// with the policy refusing nothing, since a policy that breaks the page would be switched off.
const runs = browserTestRuns("docs-browser");

describe.runIf(runs)("the API reference in a browser, under its Content-Security-Policy", () => {
  let service: TestService;
  let browser: Browser;

  beforeAll(async () => {
    service = await startTestService({ env: { AUTO_AVATARS: "false" } });
    browser = await launchChromium();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  it("renders the operations, with nothing it needs refused", { timeout: 180_000 }, async () => {
    const page = await browser.newPage();
    const consoleLines: string[] = [];
    page.on("console", (message) => consoleLines.push(`${message.type()}: ${message.text()}`));
    page.on("pageerror", (error) => consoleLines.push(`pageerror: ${error.message}`));
    // Every refusal by the policy, whatever part of the page caused it.
    await page.addInitScript(() => {
      const seen: string[] = [];
      (window as unknown as { violations: string[] }).violations = seen;
      document.addEventListener("securitypolicyviolation", (event) => seen.push(`${event.effectiveDirective} ${event.blockedURI}`));
    });
    try {
      const opened = await page.goto(`${service.url}/docs`, { timeout: 150_000 });
      expect(opened?.status()).toBe(200);
      expect(opened?.headers()["content-security-policy"]).toMatch(/script-src 'sha256-/);
      await page.getByRole("heading", { level: 1 }).first().waitFor({ timeout: 60_000 });
      expect(await page.getByRole("heading", { level: 1 }).first().textContent()).toContain("Persona");
      // The sidebar works (the inlined Redoc bundle runs): opening a tag shows its operations.
      await page.getByText("personas", { exact: true }).first().click();
      await page.getByText("Create a persona").first().waitFor({ timeout: 60_000 });
      await page.waitForLoadState("networkidle");
      // Refused on purpose: what the bundle asks of Redocly's hosts (its "powered by" badge from
      // their CDN, telemetry traces); the page loads nothing from outside the service.
      const ownCdn = (line: string) => /https:\/\/[a-z.]*redoc(ly)?\.(ly|com)\//.test(line);
      // Refused too, on purpose: FlexSearch's test whether it may build its search worker with
      // `Function(...)`, which it catches (the search then runs on the page), so no 'unsafe-eval'.
      const violations = await page.evaluate(() => (window as unknown as { violations: string[] }).violations);
      expect(violations.filter((line) => !ownCdn(line) && line !== "script-src eval")).toEqual([]);
      expect(consoleLines.filter((line) => /Content Security Policy|Refused to/i.test(line) && !ownCdn(line))).toEqual([]);
      expect(consoleLines.filter((line) => line.startsWith("pageerror"))).toEqual([]);
    } catch (error) {
      throw new Error(`${String(error)}\nbrowser console:\n${consoleLines.join("\n")}`, { cause: error });
    } finally {
      await page.close();
    }
  });
});
