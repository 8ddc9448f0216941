import { retryAfterMs } from "./errors.ts";
import { isDeduplicated } from "./idempotency.ts";

// Methods that HTTP defines as idempotent: repeating them cannot act twice.
const IDEMPOTENT_METHODS = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);

/** Longest `Retry-After` the SDK waits out; a longer one is handed to the caller as a RateLimitError. */
export const MAX_RETRY_AFTER_MS = 60_000;
const INITIAL_DELAY_MS = 500;
const MAX_DELAY_MS = 8_000;

/**
 * Whether sending `request` again is safe: an idempotent method, or a POST of an operation whose
 * contract takes an `Idempotency-Key` (the service answers a repeat with the first result).
 */
export function isReplayable(request: Request): boolean {
  return IDEMPOTENT_METHODS.has(request.method) || isDeduplicated(request);
}

/** 429 and 5xx are worth another try; 501 means "not built", which no retry changes. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || (status >= 500 && status !== 501);
}

/**
 * How long to wait before retry number `attempt` (0-based): the service's `Retry-After` when it
 * gave a usable one, else exponential backoff with jitter so that many clients do not retry in step.
 * Undefined means "do not retry": the service asked for a longer wait than is worth blocking on.
 */
export function retryDelayMs(attempt: number, headers?: Headers): number | undefined {
  const asked = headers ? retryAfterMs(headers) : undefined;
  if (asked !== undefined) return asked <= MAX_RETRY_AFTER_MS ? asked : undefined;
  const ceiling = Math.min(INITIAL_DELAY_MS * 2 ** attempt, MAX_DELAY_MS);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}
