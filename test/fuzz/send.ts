import { Agent, request } from "node:http";
import type { FuzzRequest } from "./cases.ts";

// Requests go out through node:http rather than fetch: fetch normalizes the path (`..`, broken
// percent-encoding) and refuses some header bytes, and the fuzzer must send what it generated.

export interface FuzzAnswer {
  status: number;
  headers: Headers;
  contentType: string;
  bytes: Uint8Array;
  text: string;
}

const agent = new Agent({ keepAlive: true, maxSockets: 8 });

function toHeaders(raw: Record<string, string | string[] | undefined>): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
  }
  return headers;
}

function once(baseUrl: string, r: FuzzRequest, timeoutMs: number): Promise<FuzzAnswer> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        method: r.method,
        path: r.path,
        headers: { ...r.headers, ...(r.body ? { "content-length": String(r.body.length) } : {}) },
        timeout: timeoutMs,
        insecureHTTPParser: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("error", reject);
        res.on("end", () => {
          const bytes = new Uint8Array(Buffer.concat(chunks));
          const contentType = (res.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
          const text = /^(application\/json|text\/)/.test(contentType) ? new TextDecoder().decode(bytes) : "";
          resolve({ status: res.statusCode ?? 0, headers: toHeaders(res.headers), contentType, bytes, text });
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error(`no complete answer within ${timeoutMs} ms`)));
    req.on("error", (error) => reject(Object.assign(error, { reusedSocket: req.reusedSocket })));
    if (r.body) req.end(Buffer.from(r.body));
    else req.end();
  });
}

/**
 * Sends one request. A kept-alive socket that the server closed (idle) just as it was reused fails
 * before the request reaches the server; that case alone is sent once more (Node's own advice for
 * `reusedSocket`). Any other reset is reported as the reset it is.
 */
export async function send(baseUrl: string, r: FuzzRequest, timeoutMs = 60_000): Promise<FuzzAnswer> {
  try {
    return await once(baseUrl, r, timeoutMs);
  } catch (error) {
    const { code, reusedSocket } = error as { code?: string; reusedSocket?: boolean };
    if (code === "ECONNRESET" && reusedSocket) return once(baseUrl, r, timeoutMs);
    throw error;
  }
}

export function closeSockets(): void {
  agent.destroy();
}
