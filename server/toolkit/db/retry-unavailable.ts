import pRetry from "p-retry";
import { isDatabaseUnavailable } from "./unavailable.ts";

/**
 * Runs `write` again while the database is unreachable (a failover, a restart), for up to `forMs`:
 * for writes that no client can retry because no request is waiting on them, such as the end of a
 * streamed reply. Any other failure, the deadline or `signal` (once a failure happened) ends it
 * with the last error; the first attempt always runs.
 */
export async function retryWhileUnavailable<T>(write: () => Promise<T>, options: { forMs: number; signal?: AbortSignal; onRetry?: (error: unknown) => void }): Promise<T> {
  return pRetry(write, {
    retries: Number.POSITIVE_INFINITY,
    minTimeout: 250,
    maxTimeout: 2_000,
    factor: 2,
    maxRetryTime: options.forMs,
    // Not p-retry's `signal`: an aborted one would skip even the first attempt (a shutdown still
    // stores what it can); it only stops the attempts after a failure.
    shouldRetry: ({ error }) => isDatabaseUnavailable(error) && options.signal?.aborted !== true,
    onFailedAttempt: ({ error }) => (isDatabaseUnavailable(error) ? options.onRetry?.(error) : undefined),
  });
}
