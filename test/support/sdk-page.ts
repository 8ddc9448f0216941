import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

// A page that loads the SDK's ESM build in a browser: the build in a temporary folder, and a small
// server for the page, the build and its two dependencies (as the import map names them).

const root = join(import.meta.dirname, "..", "..");
const run = promisify(execFile);

/** The import map every SDK page declares. */
export const SDK_IMPORT_MAP = `<script type="importmap">
  { "imports": { "openapi-fetch": "/modules/openapi-fetch.js", "eventsource-parser": "/modules/eventsource-parser.js" } }
</script>`;

/** Builds the SDK's ESM bundle into a temporary folder; `remove` deletes it. */
export async function buildSdkForBrowser(): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), "persona-sdk-esm-"));
  await run(process.execPath, [join(root, "sdk", "build.mjs"), "--out", dir, "--esm-only"]);
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

export interface SdkPageOptions {
  /** The page's HTML, read on each request. */
  html: () => string;
  /** More files by path: their bytes or text, and their media type. */
  extra?: Record<string, { body: () => string | Buffer; type: string }>;
  /** Requests whose path starts with this go to `passTo` unchanged (the page calls the API on its own origin). */
  passPrefix?: string;
  passTo?: string;
}

/** Serves the page at `/`, the SDK build at `/sdk/`, its dependencies at `/modules/`, and `extra`. */
export function sdkPageServer(sdkDir: string, options: SdkPageOptions): Server {
  const files: Record<string, [string, string]> = {
    "/sdk/index.js": [join(sdkDir, "index.js"), "text/javascript"],
    "/sdk/index.js.map": [join(sdkDir, "index.js.map"), "application/json"],
    "/modules/openapi-fetch.js": [join(root, "node_modules/openapi-fetch/dist/index.mjs"), "text/javascript"],
    "/modules/eventsource-parser.js": [join(root, "node_modules/eventsource-parser/dist/index.js"), "text/javascript"],
  };
  return createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://page").pathname;
    if (options.passPrefix && options.passTo && path.startsWith(options.passPrefix)) return passThrough(options.passTo, req, res);
    if (path === "/") return void res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(options.html());
    const extra = options.extra?.[path];
    if (extra) return void res.writeHead(200, { "content-type": extra.type }).end(extra.body());
    const file = files[path];
    if (!file) return void res.writeHead(404).end();
    readFile(file[0]).then(
      (body) => res.writeHead(200, { "content-type": file[1] }).end(body),
      () => res.writeHead(500).end(),
    );
  });
}

function passThrough(target: string, req: IncomingMessage, res: ServerResponse): void {
  const upstream = new URL(target);
  const forwarded = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  forwarded.on("error", () => res.destroy());
  req.pipe(forwarded);
}

/** Listens on a free loopback port; the origin names `host` (`localhost` is another origin than `127.0.0.1`). */
export async function listenOn(server: Server, host: "127.0.0.1" | "localhost" = "127.0.0.1"): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://${host}:${(server.address() as AddressInfo).port}`;
}
