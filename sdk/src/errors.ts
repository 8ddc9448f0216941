import { rateLimitOf, requestIdOf, type RateLimit } from "./response-meta.ts";
import type { ErrorCode, Schemas } from "./types.ts";

type Details = NonNullable<Schemas["ErrorInfo"]["details"]>;

interface ErrorInit {
  status?: number | undefined;
  code: ErrorCode | (string & {});
  message: string;
  details?: Details | undefined;
  headers?: Headers | undefined;
  cause?: unknown;
}

/**
 * Base class of every failure the SDK reports: an error answer of the service (with `status`), a
 * connection failure or a timeout (without). `code` is the contract's machine-readable code.
 *
 * @example
 * try {
 *   await client.personas.get(id);
 * } catch (error) {
 *   if (error instanceof NotFoundError) return null;
 *   if (error instanceof PersonaError) console.error(error.code, error.requestId);
 *   throw error;
 * }
 */
export class PersonaError extends Error {
  /** HTTP status; undefined when no answer arrived (connection error, timeout, stream error). */
  readonly status: number | undefined;
  readonly code: ErrorCode | (string & {});
  /** Structured facts, e.g. `details.errors` = [{path, message}] on a 400. */
  readonly details: Details | undefined;
  /** `X-Request-Id` of the answer: quote it when reporting a problem. */
  readonly requestId: string | undefined;
  /** The rate-limit state the answer reported (`X-RateLimit-*`), as `.withResponse()` gives it on success. */
  readonly rateLimit: RateLimit | undefined;
  readonly headers: Headers | undefined;

  constructor(init: ErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.details = init.details;
    this.headers = init.headers;
    this.requestId = init.headers ? requestIdOf(init.headers) : undefined;
    this.rateLimit = init.headers ? rateLimitOf(init.headers) : undefined;
  }
}

export class BadRequestError extends PersonaError {}
export class AuthenticationError extends PersonaError {}
/** 402: a plan quota is used up; `details` carries {limit, used, plan}. */
export class PlanLimitError extends PersonaError {}
export class PermissionDeniedError extends PersonaError {}
export class NotFoundError extends PersonaError {}
export class ConflictError extends PersonaError {}
export class PayloadTooLargeError extends PersonaError {}
export class UnsupportedMediaTypeError extends PersonaError {}

/** 429. `retryAfter` is the wait in seconds the service asked for, when it said. */
export class RateLimitError extends PersonaError {
  readonly retryAfter: number | undefined;
  constructor(init: ErrorInit) {
    super(init);
    const ms = init.headers ? retryAfterMs(init.headers) : undefined;
    this.retryAfter = ms === undefined ? undefined : Math.ceil(ms / 1000);
  }
}

/** Any 5xx; the specific ones below extend it so that one `instanceof` catches the server's side. */
export class InternalServerError extends PersonaError {}
export class NotImplementedError extends InternalServerError {}
/** 502: the model, payment or chat-platform provider failed. */
export class UpstreamError extends InternalServerError {}
/** 503: a capability with no provider configured, or the service is not ready. */
export class ProviderUnavailableError extends InternalServerError {}

/** No answer arrived: DNS, refused or reset connection, or a stream that broke off. */
export class ConnectionError extends PersonaError {
  constructor(message = "Connection error", cause?: unknown) {
    super({ code: "connection_error", message, cause });
  }
}

/** No answer (or, on a stream, no data) within the `timeout`. */
export class TimeoutError extends ConnectionError {
  constructor(message = "Request timed out") {
    super(message);
    Object.defineProperty(this, "code", { value: "timeout" });
  }
}

/** An `error` event ended a chat stream: no reply was stored. `code` is e.g. `upstream_error`. */
export class StreamError extends PersonaError {}

/**
 * A chat stream gave up resuming: `resumes` reconnections in a row (the resume operation with
 * `Last-Event-ID`) brought no event past `lastEventId`, because the connection kept failing or the
 * service kept ending the stream before `done` or `error`. The generation may still finish on the
 * service: follow it later with `conversations.resume()`, or read it with `getGeneration()`.
 * `cause` is the last failure; `requestId` names the request that opened the stream.
 */
export class StreamResumeError extends StreamError {
  readonly generationId: string;
  /** The id of the last event the stream handled; undefined when none carried an id. */
  readonly lastEventId: string | undefined;
  readonly resumes: number;

  constructor(init: { generationId: string; lastEventId: string | undefined; resumes: number; cause: unknown; headers?: Headers | undefined }) {
    const after = init.lastEventId === undefined ? "" : ` after event ${init.lastEventId}`;
    super({
      code: "stream_resume_failed",
      message: `The chat stream gave up: ${init.resumes} reconnections in a row brought no new event${after} (generation ${init.generationId})`,
      cause: init.cause,
      headers: init.headers,
    });
    this.generationId = init.generationId;
    this.lastEventId = init.lastEventId;
    this.resumes = init.resumes;
  }
}

// Class names survive minification this way, and `error.name` reads well in logs.
for (const [name, cls] of Object.entries({
  PersonaError, BadRequestError, AuthenticationError, PlanLimitError, PermissionDeniedError, NotFoundError,
  ConflictError, PayloadTooLargeError, UnsupportedMediaTypeError, RateLimitError, InternalServerError,
  NotImplementedError, UpstreamError, ProviderUnavailableError, ConnectionError, TimeoutError, StreamError,
  StreamResumeError,
})) {
  Object.defineProperty(cls.prototype, "name", { value: name, configurable: true });
}

const byStatus: Record<number, typeof PersonaError> = {
  400: BadRequestError,
  401: AuthenticationError,
  402: PlanLimitError,
  403: PermissionDeniedError,
  404: NotFoundError,
  409: ConflictError,
  413: PayloadTooLargeError,
  415: UnsupportedMediaTypeError,
  429: RateLimitError,
  501: NotImplementedError,
  502: UpstreamError,
  503: ProviderUnavailableError,
};

/**
 * The typed error for an error answer. `body` is the parsed body when the caller already read it
 * (openapi-fetch does); anything that is not the contract's envelope still gives a usable error.
 */
export function errorFromResponse(response: Response, body: unknown): PersonaError {
  const info = (body as { error?: { code?: unknown; message?: unknown; details?: Details } } | undefined)?.error;
  const status = response.status;
  const Class = byStatus[status] ?? (status >= 500 ? InternalServerError : PersonaError);
  return new Class({
    status,
    code: typeof info?.code === "string" ? info.code : `http_${status}`,
    message: typeof info?.message === "string" ? info.message : `HTTP ${status} ${response.statusText}`.trim(),
    details: info?.details,
    headers: response.headers,
  });
}

/** Reads an error answer's body and returns its typed error (for responses we fetched ourselves). */
export async function readError(response: Response): Promise<PersonaError> {
  const text = await response.text().catch(() => "");
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return errorFromResponse(response, body);
}

/** `Retry-After` in milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(headers: Headers): number | undefined {
  const value = headers.get("retry-after");
  if (value === null || value.trim() === "") return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
