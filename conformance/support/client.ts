import { checkAnswer } from "./check.ts";
import { operation, type Operation } from "../../test/support/contract.ts";
import { record } from "./ledger.ts";
import { isPlaceholder } from "./placeholders.ts";
import { target } from "./target.ts";

export interface CallOptions {
  path?: Record<string, string>;
  query?: Record<string, string | number | boolean | undefined>;
  json?: unknown;
  form?: Record<string, string>;
  multipart?: FormData;
  /** A session JWT or OAuth access token, sent as a Bearer credential. */
  token?: string;
  apiKey?: string;
  headers?: Record<string, string>;
  /**
   * The statuses a stateful target must answer. Ignored by the mock (it answers examples), and
   * relaxed when the call carries a placeholder because what it refers to could not be created.
   */
  expect?: number[];
  /**
   * Runs once the answer's headers have arrived, before its body is read: what makes an endless
   * stream (room events) end, so that the whole answer can be judged.
   */
  whileStreaming?: () => Promise<void>;
}

export interface Answer {
  status: number;
  headers: Headers;
  contentType: string;
  text: string;
  bytes: Uint8Array<ArrayBuffer>;
  /** The parsed body when it is JSON. */
  json: unknown;
}

/** Thrown when the operation's area answers 501 not_implemented: the calling test is skipped. */
export class NotLiveError extends Error {
  readonly operationId: string;
  constructor(operationId: string) {
    super(`${operationId} is not live on this target (501 not_implemented)`);
    this.operationId = operationId;
  }
}

/** Behind `prism proxy`, calls that are not a JSON exchange go straight to the real server. */
function baseFor(op: Operation, options: CallOptions): string {
  if (target.kind !== "proxy") return target.baseUrl;
  const statuses = Object.entries(op.responses).filter(([status]) => /^[23]/.test(status));
  const jsonOnly = statuses.every(([, spec]) => Object.keys(spec.content ?? {}).every((type) => type === "application/json"));
  const hasBody = statuses.every(([, spec]) => spec.content);
  return jsonOnly && hasBody && !options.multipart && !options.form ? target.baseUrl : target.directUrl;
}

function urlFor(op: Operation, options: CallOptions, base: string): string {
  const path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const value = options.path?.[name];
    if (value === undefined) throw new Error(`${op.operationId}: path parameter ${name} is missing`);
    return encodeURIComponent(value);
  });
  const url = new URL(`${base}${path}`);
  for (const [name, value] of Object.entries(options.query ?? {})) if (value !== undefined) url.searchParams.set(name, String(value));
  return url.toString();
}

function requestInit(op: Operation, options: CallOptions, viaProxy: boolean): RequestInit {
  const headers: Record<string, string> = { accept: "*/*", ...options.headers };
  // `prism proxy` answers an upstream 501 with a mock of the operation (its first success example),
  // which would count a not-live operation as exercised. Asking for a 501 makes that mock a 501 too;
  // the server ignores the header.
  if (viaProxy) headers.prefer = "code=501";
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.apiKey) headers["x-api-key"] = options.apiKey;
  let body: BodyInit | undefined;
  if (options.json !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(options.json);
  } else if (options.form) {
    headers["content-type"] = "application/x-www-form-urlencoded";
    body = new URLSearchParams(options.form).toString();
  } else if (options.multipart) body = options.multipart;
  return { method: op.method, headers, body, redirect: "manual", signal: AbortSignal.timeout(20_000) };
}

/**
 * A kept-alive socket that the server closes just as it is reused fails with ECONNRESET before the
 * request reaches a handler (seen on a loaded 2-core machine); that one case is sent again. A
 * server that really dies is caught by the driver, which watches its processes.
 */
async function fetchOnce(url: string, init: () => RequestInit): Promise<Response> {
  try {
    return await fetch(url, init());
  } catch (error) {
    const code = (error as { cause?: { code?: string } }).cause?.code;
    if (code !== "ECONNRESET" && code !== "UND_ERR_SOCKET") throw error;
    return fetch(url, init());
  }
}

/**
 * Calls one operation of the contract and judges the answer against it. Fails (throws) on anything
 * the contract does not allow, throws NotLiveError on 501 not_implemented, and records the
 * operation as exercised otherwise.
 */
export async function call(operationId: string, options: CallOptions = {}): Promise<Answer> {
  const op = operation(operationId);
  const base = baseFor(op, options);
  const url = urlFor(op, options, base);
  const viaProxy = target.kind === "proxy" && base === target.baseUrl;
  const response = await fetchOnce(url, () => requestInit(op, options, viaProxy));
  await options.whileStreaming?.();
  const bytes = new Uint8Array(await response.arrayBuffer());
  const contentType = (response.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  const text = /^(application\/(json|problem\+json)|text\/)/.test(contentType) ? new TextDecoder().decode(bytes) : "";
  const { problems, json } = checkAnswer(op, { status: response.status, headers: response.headers, contentType, text });
  const where = `${operationId} (${op.method} ${url}) answered ${response.status}`;
  if (problems.length) throw new Error(`${where}, which breaks the contract:\n- ${problems.join("\n- ")}`);
  // Behind the proxy the 501 body is Prism's mock of one, so its code is not the server's.
  if (response.status === 501 && (viaProxy || (json as { error?: { code?: string } })?.error?.code === "not_implemented")) {
    record({ operationId, status: 501, outcome: "not-live" });
    throw new NotLiveError(operationId);
  }
  const relaxed = !target.stateful || isPlaceholder(options);
  if (options.expect && !relaxed && !options.expect.includes(response.status)) {
    throw new Error(`${where}, expected ${options.expect.join(" or ")}: ${text.slice(0, 1000)}`);
  }
  if (response.status !== 501) record({ operationId, status: response.status, outcome: "exercised" });
  return { status: response.status, headers: response.headers, contentType, text, bytes, json };
}
