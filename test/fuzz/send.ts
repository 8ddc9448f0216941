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

/** How long an event stream that has not ended is read before it is judged. */
const STREAM_WINDOW_MS = 3_000;

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
        const contentType = (res.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
        let done = false;
        const finish = (cut: boolean) => {
          if (done) return;
          done = true;
          clearTimeout(streamCut);
          let bytes = new Uint8Array(Buffer.concat(chunks));
          let text = /^(application\/json|text\/)/.test(contentType) ? new TextDecoder().decode(bytes) : "";
          if (cut) {
            // A stream that is still open is judged on its complete events so far.
            text = text.slice(0, text.lastIndexOf("\n\n") + 2);
            bytes = new TextEncoder().encode(text);
          }
          resolve({ status: res.statusCode ?? 0, headers: toHeaders(res.headers), contentType, bytes, text });
          if (cut) req.destroy();
        };
        // Some event streams stay open until the client leaves (a room's live events): what
        // arrived in the first seconds is the answer.
        const streamCut = contentType === "text/event-stream" ? setTimeout(() => finish(true), STREAM_WINDOW_MS) : undefined;
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("error", (error) => (done ? undefined : reject(error)));
        res.on("end", () => finish(false));
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
