import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { contractPath } from "../contract.ts";
import type { Logger } from "../logger.ts";
import { ApiError } from "../http/errors.ts";

const run = promisify(execFile);
const projectRoot = fileURLToPath(new URL("../..", import.meta.url));
// The CLI's own script, run on this process's Node: a shebang would pick whatever `node` is on PATH.
const REDOCLY = join(projectRoot, "node_modules", "@redocly", "cli", "bin", "cli.js");

/**
 * The rendered API reference (`npm run docs`, Redocly's single-file HTML), built on first request
 * and kept for the life of the process: building takes a few seconds of CPU that a server start,
 * and every test service, would otherwise pay for a page few ask for. The Redoc scripts are inlined
 * (`--inlineBundle`), so the page needs nothing from a CDN; telemetry and update checks are off.
 */
let rendering: Promise<string> | undefined;

export function apiReference(log: Logger): Promise<string> {
  rendering ??= render(log).catch((error: unknown) => {
    // A failed build is tried again by the next request rather than remembered.
    rendering = undefined;
    throw error;
  });
  return rendering;
}

async function render(log: Logger): Promise<string> {
  if (!existsSync(REDOCLY)) {
    throw new ApiError(503, "provider_unavailable", "The rendered API reference needs @redocly/cli (a development dependency); /openapi.yaml and /openapi.json are served without it");
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
    return html;
  } catch (error) {
    if (error instanceof ApiError) throw error;
    log.error({ err: error }, "rendering the API reference failed");
    throw new ApiError(503, "provider_unavailable", "The API reference could not be rendered; /openapi.yaml and /openapi.json are served");
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
