// What an answer's headers say beyond its body: the request id to quote, and the rate-limit state.
// Read the same way for a success (`.withResponse()`) and for an error (PersonaError).

/**
 * The rate-limit state an answer reports, from `X-RateLimit-Limit`, `X-RateLimit-Remaining` and
 * `X-RateLimit-Reset` (the service sends them on every answer).
 */
export interface RateLimit {
  /** Requests allowed in the current window. */
  limit: number;
  /** Requests left in the current window. */
  remaining: number;
  /** When the current window resets (`X-RateLimit-Reset` is in Unix epoch seconds). */
  resetAt: Date;
}

/** What `.withResponse()` gives besides the data. */
export interface ResponseMeta {
  /** The raw answer: `status`, `headers`. Its body has been read by the SDK (or is the stream it reads). */
  response: Response;
  /** `X-Request-Id` of the answer: quote it when reporting a problem. */
  requestId: string | undefined;
  /** The rate-limit state after this request; undefined when the answer did not carry it. */
  rateLimit: RateLimit | undefined;
}

/** The data of a call together with its answer's metadata. */
export type WithResponse<T> = { data: T } & ResponseMeta;

/** The header the service names each request by (echoing a well-formed one the caller sent). */
export const REQUEST_ID_HEADER = "x-request-id";

export function requestIdOf(headers: Headers): string | undefined {
  return headers.get(REQUEST_ID_HEADER) || undefined;
}

/** A non-negative integer header, or undefined when it is absent or not one. */
function count(headers: Headers, name: string): number | undefined {
  const value = headers.get(name)?.trim();
  if (!value || !/^\d+$/.test(value)) return undefined;
  const number = Number(value);
  return Number.isSafeInteger(number) ? number : undefined;
}

/** The rate-limit state of an answer; undefined unless all three headers are present and readable. */
export function rateLimitOf(headers: Headers): RateLimit | undefined {
  const limit = count(headers, "x-ratelimit-limit");
  const remaining = count(headers, "x-ratelimit-remaining");
  const reset = count(headers, "x-ratelimit-reset");
  if (limit === undefined || remaining === undefined || reset === undefined) return undefined;
  return { limit, remaining, resetAt: new Date(reset * 1000) };
}

export function responseMeta(response: Response): ResponseMeta {
  return { response, requestId: requestIdOf(response.headers), rateLimit: rateLimitOf(response.headers) };
}
