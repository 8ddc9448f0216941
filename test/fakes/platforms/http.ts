import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A request one of the platform fakes received. */
export interface PlatformRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** JSON or form body, parsed. */
  body: Record<string, unknown>;
}

export type Route = (request: PlatformRequest, res: ServerResponse) => void | Promise<void>;

/** An injected answer for the next matching calls: an HTTP status with a body and headers. */
export interface Injected {
  /** Method path suffix, e.g. `/messages` or `sendMessage`. */
  match: string;
  status: number;
  body: unknown;
  headers?: Record<string, string>;
  /** How many calls get it (default 1). */
  times?: number;
}

export async function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  if (!text) return {};
  const type = String(req.headers["content-type"] ?? "");
  if (type.includes("application/x-www-form-urlencoded")) {
    const form = Object.fromEntries(new URLSearchParams(text));
    return form;
  }
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return { raw: text };
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

/** A loopback HTTP server that records every request and lets a test inject failures. */
export async function startHttp(route: Route): Promise<{ server: Server; url: string; requests: PlatformRequest[]; inject: (answer: Injected) => void; close: () => Promise<void> }> {
  const requests: PlatformRequest[] = [];
  const injected: Injected[] = [];
  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? "/", "http://fake");
      const request: PlatformRequest = { method: req.method ?? "GET", path: decodeURIComponent(url.pathname), headers: req.headers, body: await readBody(req) };
      requests.push(request);
      const found = injected.find((answer) => request.path.endsWith(answer.match));
      if (found) {
        found.times = (found.times ?? 1) - 1;
        if (found.times <= 0) injected.splice(injected.indexOf(found), 1);
        sendJson(res, found.status, found.body, found.headers);
        return;
      }
      await route(request, res);
    })().catch((error: unknown) => sendJson(res, 500, { error: String(error) }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    requests,
    inject: (answer) => injected.push(answer),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let sequence = 0n;
/** A platform-style increasing numeric id (snowflake-like). */
export function nextId(base = 1300000000000000000n): string {
  sequence += 1n;
  return String(base + sequence);
}
