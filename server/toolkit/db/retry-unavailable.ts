import pRetry from "p-retry";
import { isDatabaseUnavailable } from "./unavailable.ts";

/**
 * Runs `write` again while the database is unreachable (a failover, a restart), for up to `forMs`:
 * for writes that no client can retry because no request is waiting on them, such as the end of a
 * streamed reply. Any other failure, the deadline or `signal` ends it with the last error.
 */
export async function retryWhileUnavailable<T>(write: () => Promise<T>, options: { forMs: number; signal?: AbortSignal; onRetry?: (error: unknown) => void }): Promise<T> {
  return pRetry(write, {
    retries: Number.POSITIVE_INFINITY,
    minTimeout: 250,
    maxTimeout: 2_000,
    factor: 2,
    maxRetryTime: options.forMs,
    signal: options.signal,
    shouldRetry: ({ error }) => isDatabaseUnavailable(error),
    onFailedAttempt: ({ error }) => (isDatabaseUnavailable(error) ? options.onRetry?.(error) : undefined),
  });
}
