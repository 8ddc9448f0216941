import { mkdir, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { PNG } from "pngjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { root } from "../support/contract.ts";
import { outboxMails } from "../support/outbox.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { browserTestRuns, launchChromium } from "../support/browser.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { until } from "../support/wait.ts";

// The built-in pages in Chromium, as a person sees them: every page at a desktop and a phone width,
// in the light and the dark scheme; each screenshot checked for content, axe-core run in the page
// (no serious or critical violation), no request to another host, no refusal of the page's own
// policy, no sideways scrolling on the phone; and the e-mail pages' forms done with the keyboard.
const runs = browserTestRuns("pages-browser");

const VIEWPORTS = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } } as const;
const SCREENSHOTS = join(tmpdir(), "persona-pages-screenshots");

interface AxeResult {
  violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[];
  passes: unknown[];
}

describe.runIf(runs)("the built-in pages in a browser", () => {
  let service: TestService;
  let browser: Browser;
  let axeSource: string;
  let creator: TestUser;
  const paths: Record<string, { path: string; heading: string; text: string }> = {};

  /** The link of the latest outbox mail of `kind` to `to`. */
  async function mailedLink(to: string, kind: "verify_email" | "reset_password"): Promise<string> {
    const mail = await until(`the ${kind} mail`, async () => (await outboxMails(service, { to, kind })).at(-1));
    return /(http\S+\?token=\S+)/.exec(mail.text!)![1]!;
  }

  beforeAll(async () => {
    // Automatic avatars on: the pages show an image of the service's own.
    service = await startTestService({ env: { AUTO_AVATARS: "true" } });
    axeSource = await readFile(join(root, "node_modules/axe-core/axe.min.js"), "utf8");
    await mkdir(SCREENSHOTS, { recursive: true });
    browser = await launchChromium();

    creator = await registerUser(service);
    await service.services.db.knex("users").where({ id: creator.id }).update({ plan: "creator", display_name: "Mara Okafor" });
    const fan = await registerUser(service);
    const persona = await service.clientFor(creator).POST("/v1/personas", {
      body: {
        name: "Captain Nova",
        instructions: "You are Captain Nova.",
        description: "A retired starship captain who explains astronomy with stories from forty years between the stars.\n\nAsk her about comets, nebulae or the night she met a pulsar.",
        greeting_message: "Welcome aboard, {{user}}! {{char}} here. What shall we look at tonight?",
        is_public: true,
      },
    });
    const id = persona.data!.id;
    await until("the automatic avatar", async () => (await service.api.GET("/v1/personas/{id}", { params: { path: { id } }, headers: creator.auth })).data?.avatar_url);
    const published = await service.clientFor(creator).POST("/v1/studio/{persona_id}/publish", { params: { path: { persona_id: id } }, body: { tags: ["astronomy", "stories"], pricing: "free" } });
    await service.clientFor(fan).POST("/v1/marketplace/{id}/rate", { params: { path: { id: published.data!.id } }, body: { rating: 5, review: "Explained black holes to my kids in five minutes." } });
    await service.clientFor(fan).POST("/v1/social/likes/{persona_id}", { params: { path: { persona_id: id } } });

    const reader = await registerUser(service);
    await service.api.POST("/v1/auth/forgot-password", { body: { email: reader.email } });
    paths.persona = { path: `/p/${id}`, heading: "Captain Nova", text: "Welcome aboard, you! Captain Nova here." };
    paths.listing = { path: new URL(published.data!.marketplace_url).pathname, heading: "Captain Nova", text: "Explained black holes to my kids" };
    paths.verify = { path: pathOf(await mailedLink(reader.email, "verify_email")), heading: "Confirm your e-mail address", text: "Confirm my address" };
    paths.reset = { path: pathOf(await mailedLink(reader.email, "reset_password")), heading: "Choose a new password", text: "8 to 128 characters" };
    paths.unknown = { path: "/verify-email?token=vt_never_issued", heading: "This link does not work", text: "latest confirmation e-mail" };
    paths.missing = { path: "/p/0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01", heading: "Not found", text: "This persona is not available" };
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  const pathOf = (link: string) => {
    const url = new URL(link);
    return `${url.pathname}${url.search}`;
  };

  /** Opens `path` in a fresh page that records every request and every console line. */
  async function open(path: string, viewport: { width: number; height: number }, colorScheme: "light" | "dark") {
    const context = await browser.newContext({ viewport, colorScheme, deviceScaleFactor: 1 });
    const page = await context.newPage();
    const requests: string[] = [];
    const console: string[] = [];
    page.on("request", (request) => requests.push(request.url()));
    page.on("console", (message) => console.push(`${message.type()}: ${message.text()}`));
    page.on("pageerror", (error) => console.push(`pageerror: ${String(error)}`));
    const response = await page.goto(`${service.url}${path}`, { waitUntil: "load" });
    return { context, page, requests, console, status: response!.status() };
  }

  async function axe(page: Page): Promise<AxeResult["violations"]> {
    await page.evaluate(axeSource);
    const result = await page.evaluate(() => (window as unknown as { axe: { run: (options: unknown) => Promise<AxeResult> } }).axe.run({ resultTypes: ["violations"] }));
    // The rules ran (contrast, labels, landmarks...): a check that checked nothing would pass too.
    expect(result.passes.length).toBeGreaterThan(10);
    return result.violations.filter((violation) => violation.impact === "serious" || violation.impact === "critical");
  }

  /** How many distinct colours a screenshot has: a blank or unstyled page has few. */
  function colours(png: Buffer): { width: number; height: number; distinct: number } {
    const image = PNG.sync.read(png);
    const seen = new Set<number>();
    for (let i = 0; i < image.data.length; i += 4 * 7) seen.add(image.data.readUInt32BE(i));
    return { width: image.width, height: image.height, distinct: seen.size };
  }

  for (const name of ["persona", "listing", "verify", "reset", "unknown", "missing"] as const) {
    for (const [size, viewport] of Object.entries(VIEWPORTS)) {
      it(`${name} at ${size} width: its content, no outside request, no policy refusal, no serious axe violation in light or dark`, async () => {
        for (const scheme of ["light", "dark"] as const) {
          const { context, page, requests, console, status } = await open(paths[name]!.path, viewport, scheme);
          try {
            expect(status).toBe(name === "missing" || name === "unknown" ? 404 : 200);
            await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe(paths[name]!.heading);
            await expect(page.locator("main").textContent()).resolves.toContain(paths[name]!.text);
            // Everything came from the service itself: no font, script, image or style from elsewhere.
            expect(requests.filter((url) => !url.startsWith(service.url) && !url.startsWith("data:")), requests.join("\n")).toEqual([]);
            expect(console.filter((line) => /Content Security Policy|Refused to/i.test(line))).toEqual([]);
            // The persona's own avatar image loaded (a same-origin image the policy allows).
            if (name === "persona" || name === "listing") {
              await expect(page.locator("img.avatar").evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0)).resolves.toBe(true);
            }
            // Fluid: nothing wider than the screen.
            await expect(page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).resolves.toBe(true);
            const shot = await page.screenshot({ fullPage: true, path: join(SCREENSHOTS, `${name}-${size}-${scheme}.png`) });
            const { width, distinct } = colours(shot);
            expect(width).toBe(viewport.width);
            expect(distinct, `${name} ${size} ${scheme} looks blank`).toBeGreaterThan(20);
            const violations = await axe(page);
            expect(violations, JSON.stringify(violations, null, 1)).toEqual([]);
          } finally {
            await context.close();
          }
        }
      }, 60_000);
    }
  }

  it("a hostile persona's texts show as text and run nothing", async () => {
    const hostile = `<img src=x onerror="alert(1)"><script>alert(2)</script>`;
    const persona = await service.clientFor(creator).POST("/v1/personas", {
      body: { name: `Nova ${hostile}`.slice(0, 80), instructions: "x", description: `About ${hostile}`, greeting_message: `Hi {{user}} ${hostile}`, is_public: true },
    });
    const { context, page, requests } = await open(`/p/${persona.data!.id}`, VIEWPORTS.desktop, "light");
    const dialogs: string[] = [];
    page.on("dialog", (dialog) => void (dialogs.push(dialog.message()), dialog.dismiss()));
    try {
      await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe(`Nova ${hostile}`.slice(0, 80));
      await expect(page.locator("blockquote").textContent()).resolves.toBe(`Hi you ${hostile}`);
      await expect(page.locator("main script, main img:not(.avatar)").count()).resolves.toBe(0);
      expect(dialogs).toEqual([]);
      // The would-be image was never asked for.
      expect(requests.some((url) => url.endsWith("/x"))).toBe(false);
    } finally {
      await context.close();
    }
  }, 60_000);

  it("the verification page works from the keyboard: skip link first, then the button, Enter confirms", async () => {
    const reader = await registerUser(service);
    const { context, page } = await open(pathOf(await mailedLink(reader.email, "verify_email")), VIEWPORTS.phone, "light");
    try {
      await page.keyboard.press("Tab");
      await expect(page.evaluate(() => document.activeElement?.textContent)).resolves.toBe("Skip to content");
      await page.keyboard.press("Tab");
      await expect(page.evaluate(() => document.activeElement?.textContent)).resolves.toBe("Confirm my address");
      // The focus is visible: an outline is drawn.
      await expect(page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)).resolves.toBe("solid");
      await Promise.all([page.waitForURL(`${service.url}/verify-email`), page.keyboard.press("Enter")]);
      await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("E-mail address confirmed");
      await writeFile(join(SCREENSHOTS, "verify-confirmed-phone.png"), await page.screenshot({ fullPage: true }));
    } finally {
      await context.close();
    }
    expect((await service.clientFor(reader).GET("/v1/auth/me")).data!.email_verified).toBe(true);
  }, 60_000);

  it("the reset page works from the keyboard: a mismatch is shown at its field, then the reset says what it revoked", async () => {
    const reader = await registerUser(service);
    await service.api.POST("/v1/auth/forgot-password", { body: { email: reader.email } });
    const { context, page } = await open(pathOf(await mailedLink(reader.email, "reset_password")), VIEWPORTS.phone, "dark");
    try {
      await page.getByLabel("New password", { exact: true }).focus();
      await page.keyboard.type("Orion-belt-42");
      await page.keyboard.press("Tab");
      await expect(page.evaluate(() => document.activeElement?.id)).resolves.toBe("confirm_password");
      await page.keyboard.type("Orion-belt-43");
      await Promise.all([page.waitForLoadState("load"), page.keyboard.press("Enter")]);
      await expect(page.locator("#confirm-error").textContent()).resolves.toContain("The two passwords are not the same");
      await expect(page.getByLabel("New password again").getAttribute("aria-invalid")).resolves.toBe("true");
      const violations = await axe(page);
      expect(violations, JSON.stringify(violations, null, 1)).toEqual([]);
      await writeFile(join(SCREENSHOTS, "reset-mismatch-phone-dark.png"), await page.screenshot({ fullPage: true }));

      await page.getByLabel("New password", { exact: true }).fill("Orion-belt-42");
      await page.getByLabel("New password again").fill("Orion-belt-42");
      await Promise.all([page.waitForLoadState("load"), page.getByRole("button", { name: "Change password" }).press("Enter")]);
      await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Password changed");
      await expect(page.locator("main").textContent()).resolves.toContain("1 sign-in ended");
    } finally {
      await context.close();
    }
    expect((await service.api.POST("/v1/auth/login", { body: { email: reader.email, password: "Orion-belt-42" } })).response.status).toBe(200);
  }, 60_000);
});
