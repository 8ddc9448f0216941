import { Agent as HttpAgent, request as httpRequest, type ClientRequest } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { Socket } from "node:net";
import { BlockedAddressError, forbiddenRange, guardedLookup, ipLiteral } from "../../toolkit/providers/address-guard.ts";

/** The outcome of one HTTP attempt; `error` is a short reason fit for the delivery log, never a body. */
export interface AttemptResult {
  ok: boolean;
  status: number | null;
  latencyMs: number;
  error: string | null;
}

export interface SendOptions {
  timeoutMs: number;
  allowPrivate: boolean;
}

// Keep-alive pools: a receiver taking many deliveries reuses its connections. A pooled socket was
// checked when it connected, so reusing it cannot reach another address.
const agents = { http: new HttpAgent({ keepAlive: true, maxSockets: 128 }), https: new HttpsAgent({ keepAlive: true, maxSockets: 128 }) };

/**
 * POSTs `body` to `url` once. Success is a 2xx answer (headers and body) within `timeoutMs`.
 * Redirects are answers like any other non-2xx: never followed.
 */
export function postOnce(url: URL, body: string, headers: Record<string, string>, options: SendOptions): Promise<AttemptResult> {
  const started = performance.now();
  const done = (ok: boolean, status: number | null, error: string | null): AttemptResult => ({
    ok,
    status,
    latencyMs: Math.round(performance.now() - started),
    error,
  });
  return new Promise((resolve) => {
    const literal = ipLiteral(url.hostname);
    const literalRange = literal && !options.allowPrivate ? forbiddenRange(literal) : undefined;
    if (literalRange) return resolve(done(false, null, `address not allowed: ${literal} (${literalRange})`));
    const https = url.protocol === "https:";
    // A webhook registered while the development setting was on stays refused once it is off.
    if (!https && !options.allowPrivate) return resolve(done(false, null, "HTTPS required"));
    let settled = false;
    const req: ClientRequest = (https ? httpsRequest : httpRequest)(url, {
      method: "POST",
      agent: https ? agents.https : agents.http,
      lookup: guardedLookup(options.allowPrivate),
      headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body).toString(), "user-agent": "Persona-Webhooks/1", ...headers },
    });
    const timer = setTimeout(() => {
      finish(done(false, null, `timeout after ${options.timeoutMs} ms`));
      req.destroy();
    }, options.timeoutMs);
    const finish = (result: AttemptResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    req.on("socket", (socket: Socket) => {
      // Belt and braces: the address actually connected to, whatever resolved it.
      const check = () => {
        const range = !options.allowPrivate && socket.remoteAddress ? forbiddenRange(socket.remoteAddress) : undefined;
        if (range) req.destroy(new BlockedAddressError(`connected to ${socket.remoteAddress}, a ${range} address`));
      };
      if (socket.connecting) socket.once("connect", check);
      else check();
    });
    req.on("response", (res) => {
      const status = res.statusCode ?? 0;
      res.on("error", () => finish(done(false, status, "connection lost while reading the answer")));
      res.on("end", () => {
        if (status >= 200 && status < 300) finish(done(true, status, null));
        else if (status >= 300 && status < 400) finish(done(false, status, `redirect (${status}) not followed`));
        else finish(done(false, status, `answered ${status}`));
      });
      res.resume();
    });
    req.on("error", (error: NodeJS.ErrnoException) => finish(done(false, null, describe(error))));
    req.end(body);
  });
}

function describe(error: NodeJS.ErrnoException): string {
  if (error instanceof BlockedAddressError) return `address not allowed: ${error.message}`;
  switch (error.code) {
    case "ECONNREFUSED":
      return "connection refused";
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return "host not found";
    case "ECONNRESET":
      return "connection reset";
    case "ETIMEDOUT":
      return "connection timed out";
    default:
      return error.code ? `connection failed (${error.code})` : "connection failed";
  }
}
