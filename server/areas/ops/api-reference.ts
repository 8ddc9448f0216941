import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { contractPath } from "../../toolkit/contract.ts";
import type { Logger } from "../../toolkit/logger.ts";
import { providerUnavailable } from "../../toolkit/http/error-catalogue.ts";
import { ApiError } from "../../toolkit/http/errors.ts";

const run = promisify(execFile);
const projectRoot = fileURLToPath(new URL("../../..", import.meta.url));
// The CLI's own script, run on this process's Node: a shebang would pick whatever `node` is on PATH.
const REDOCLY = join(projectRoot, "node_modules", "@redocly", "cli", "bin", "cli.js");

/**
 * The rendered API reference (`npm run docs`, Redocly's single-file HTML), built on first request
 * and kept for the life of the process: building takes a few seconds of CPU that a server start,
 * and every test service, would otherwise pay for a page few ask for. The Redoc scripts are inlined
 * (`--inlineBundle`), so the page needs nothing from a CDN; telemetry and update checks are off.
 */
let rendering: Promise<ApiReference> | undefined;

/** The page and the Content-Security-Policy that lets exactly its own scripts run. */
export interface ApiReference {
  html: string;
  policy: string;
}

export function apiReference(log: Logger): Promise<ApiReference> {
  rendering ??= render(log).catch((error: unknown) => {
    // A failed build is tried again by the next request rather than remembered.
    rendering = undefined;
    throw error;
  });
  return rendering;
}

async function render(log: Logger): Promise<ApiReference> {
  if (!existsSync(REDOCLY)) {
    throw providerUnavailable("The rendered API reference needs @redocly/cli (a development dependency); /openapi.yaml and /openapi.json are served without it");
  }
  const started = Date.now();
  const dir = await mkdtemp(join(tmpdir(), "persona-docs-"));
  try {
    const output = join(dir, "api-reference.html");
    await run(process.execPath, [REDOCLY, "build-docs", contractPath, "--inlineBundle", "--output", output], {
      cwd: projectRoot,
      env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
      timeout: 120_000,
    });
    const html = await readFile(output, "utf8");
    log.info({ ms: Date.now() - started, bytes: html.length }, "rendered the API reference");
    return { html, policy: contentSecurityPolicy(html) };
  } catch (error) {
    if (error instanceof ApiError) throw error;
    log.error({ err: error }, "rendering the API reference failed");
    throw providerUnavailable("The API reference could not be rendered; /openapi.yaml and /openapi.json are served");
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The page's scripts are all inline (the Redoc bundle, its colour-mode and start-up snippets), so
 * they are allowed by their SHA-256 and nothing else may run: no nonce (the page is built once and
 * served as is), no 'unsafe-inline' or 'unsafe-eval'. Styles stay inline-allowed: styled-components
 * writes its rules at run time and the markup has style attributes, and a style cannot run code.
 * Redoc's search runs in a blob: worker and its icons are data: URLs; the document is inlined, so
 * it fetches nothing but itself (the bundle's telemetry to Redocly's hosts and its badge from their
 * CDN are refused, on purpose, and so is FlexSearch's `Function(...)` probe, which it catches). Checked in Chromium by test/security/docs-browser.e2e.test.ts.
 */
export function contentSecurityPolicy(html: string): string {
  const hashes = [...html.matchAll(/<script(?:\s[^>]*)?>([\s\S]*?)<\/script>/g)]
    .filter((match) => !/\ssrc=/.test(match[0].slice(0, match[0].indexOf(">"))))
    .map((match) => `'sha256-${createHash("sha256").update(match[1]!, "utf8").digest("base64")}'`);
  return [
    "default-src 'none'",
    `script-src ${[...new Set(hashes)].join(" ")}`,
    "style-src 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "worker-src blob:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}
