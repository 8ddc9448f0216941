import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import YAML from "yaml";
import { expectError } from "../support/assertions.ts";
import { root } from "../support/contract.ts";
import { startTestService, type TestService } from "../support/service.ts";

// The running server documents itself (issue 13, item 12): an index at `/`, the rendered reference
// at /docs, the OpenAPI document at /openapi.yaml and /openapi.json. All credential-free.
const CHROMIUM = "/usr/bin/chromium";
const browserAvailable = existsSync(CHROMIUM) || Boolean(process.env.CI);
const committed = readFileSync(resolve(root, "generated", "openapi.yaml"), "utf8");

let service: TestService;

beforeAll(async () => {
  service = await startTestService();
}, 60_000);

afterAll(async () => {
  await service?.close();
});

const contentType = (response: Response) => response.headers.get("content-type");

describe("the documentation routes", () => {
  it("answers / with a JSON index whose every link answers 200", async () => {
    const response = await service.fetch("/");
    expect(response.status).toBe(200);
    expect(contentType(response)).toMatch(/^application\/json; charset=utf-8$/);
    expect(response.headers.get("x-ratelimit-limit")).not.toBeNull();
    const index = await response.json();
    expect(index).toMatchObject({ name: "Persona API", version: "1.0.0" });
    expect(index.links).toEqual({ docs: "/docs", openapi_yaml: "/openapi.yaml", openapi_json: "/openapi.json", healthz: "/healthz", readyz: "/readyz" });
    for (const link of Object.values(index.links as Record<string, string>)) {
      const linked = await service.fetch(link);
      await linked.arrayBuffer();
      expect(linked.status, link).toBe(200);
    }
  }, 120_000);

  it("serves the OpenAPI document as YAML, byte for byte the generated one", async () => {
    const response = await service.fetch("/openapi.yaml");
    expect(response.status).toBe(200);
    expect(contentType(response)).toBe("application/yaml; charset=utf-8");
    expect(await response.text()).toBe(committed);
  });

  it("serves the same document as JSON", async () => {
    const response = await service.fetch("/openapi.json");
    expect(response.status).toBe(200);
    expect(contentType(response)).toBe("application/json; charset=utf-8");
    expect(await response.json()).toEqual(JSON.parse(JSON.stringify(YAML.parse(committed))));
  });

  it("serves the rendered reference as one HTML page that loads nothing from elsewhere", async () => {
    const response = await service.fetch("/docs");
    expect(response.status).toBe(200);
    expect(contentType(response)).toBe("text/html; charset=utf-8");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    const html = await response.text();
    expect(html).toContain("<title>Persona API</title>");
    // No external script or stylesheet: the Redoc bundle is inlined.
    expect(html).not.toMatch(/<script[^>]+src=/);
    expect(html).not.toMatch(/<link[^>]+(modulepreload|stylesheet)[^>]+https?:/);
    expect(html).toContain("hydrate(__redoc_definition");
    // Built once: the second answer is the same page.
    expect(await (await service.fetch("/docs")).text()).toBe(html);
  }, 120_000);

  it("leaves other methods and other paths outside /v1 to the 404 of unknown routes", async () => {
    await expectError(await service.fetch("/openapi.yaml", { method: "POST" }), 404, "not_found");
    await expectError(await service.fetch("/docs/extra"), 404, "not_found");
    await expectError(await service.fetch("/openapi.yml"), 404, "not_found");
  });

  it.skipIf(!browserAvailable)("renders in a browser with every other origin blocked", async () => {
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"] });
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(String(error)));
      await page.route("**/*", (route) => (route.request().url().startsWith(service.url) ? route.continue() : route.abort()));
      await page.goto(`${service.url}/docs`);
      await page.getByRole("heading", { name: /Persona API/ }).first().waitFor({ timeout: 30_000 });
      // The page is prerendered; once the inlined Redoc bundle has hydrated it, a click on a tag in
      // the sidebar opens the tag's operations (a click before that does nothing, so it is repeated).
      const operation = page.getByRole("heading", { name: "Service index" });
      await expect
        .poll(async () => {
          await page.locator('[data-text="ops"]').first().click();
          return operation.isVisible();
        }, { timeout: 30_000, interval: 500 })
        .toBe(true);
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 120_000);
});
