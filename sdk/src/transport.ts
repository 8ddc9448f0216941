import { ConnectionError, TimeoutError } from "./errors.ts";
import type { Authenticator } from "./credentials.ts";
import { isReplayable, isRetryableStatus, retryDelayMs } from "./retry.ts";
import { anySignal, sleep } from "./signal.ts";
import type { Fetch } from "./types.ts";

export interface TransportOptions {
  fetch: Fetch;
  auth: Authenticator;
  timeout: number;
  maxRetries: number;
}

// A 401 from these means wrong input (password, spent token), not an expired access token.
const CREDENTIAL_FREE = ["/v1/auth/login", "/v1/auth/register", "/v1/auth/refresh", "/v1/auth/reset-password", "/v1/oauth/token"];

/**
 * The fetch that openapi-fetch calls: adds credentials, bounds each attempt by `timeout`, retries
 * what is safe to retry, and renews session tokens once after a 401. Error answers are returned,
 * not thrown (openapi-fetch and the helpers turn them into typed errors); only failures without an
 * answer throw, as ConnectionError or TimeoutError, or the caller's abort reason.
 */
export function createTransport(options: TransportOptions): Fetch {
  return async function send(template: Request): Promise<Response> {
    const replayable = isReplayable(template);
    const pathname = new URL(template.url).pathname;
    // At most one refresh per call, and none where a 401 is about the request's own input.
    let mayRefresh = options.auth.refresh !== undefined && !CREDENTIAL_FREE.some((path) => pathname.endsWith(path));
    for (let attempt = 0; ; attempt++) {
      const request = template.clone(); // the template keeps an unread body for the next attempt
      const usedToken = options.auth.apply(request.headers);
      let response: Response;
      try {
        response = await fetchWithTimeout(options.fetch, request, options.timeout);
      } catch (error) {
        if (template.signal.aborted) throw template.signal.reason;
        const delay = replayable && attempt < options.maxRetries ? retryDelayMs(attempt) : undefined;
        if (delay === undefined) throw error;
        await sleep(delay, template.signal);
        continue;
      }
      if (response.status === 401 && mayRefresh && usedToken !== undefined) {
        mayRefresh = false;
        if (await options.auth.refresh!(usedToken)) {
          await response.body?.cancel();
          attempt--; // the retry after a refresh is not one of the `maxRetries`
          continue;
        }
      }
      if (!isRetryableStatus(response.status) || !replayable || attempt >= options.maxRetries) return response;
      const delay = retryDelayMs(attempt, response.headers);
      if (delay === undefined) return response;
      await response.body?.cancel();
      await sleep(delay, template.signal);
    }
  };
}

/**
 * One attempt, bounded until the response headers arrive. The body is not bounded here: a chat
 * stream may legitimately run for minutes (the stream reader applies its own idle timeout), which is
 * why this is a cancellable timer rather than AbortSignal.timeout.
 */
async function fetchWithTimeout(fetch: Fetch, request: Request, timeout: number): Promise<Response> {
  const timer = new AbortController();
  const handle = setTimeout(() => timer.abort(new TimeoutError(`No answer within ${timeout} ms`)), timeout);
  try {
    return await fetch(new Request(request, { signal: anySignal([request.signal, timer.signal]) }));
  } catch (error) {
    if (timer.signal.aborted) throw timer.signal.reason;
    if (request.signal.aborted) throw request.signal.reason;
    throw new ConnectionError(`Connection error: ${(error as Error)?.message ?? String(error)}`, error);
  } finally {
    clearTimeout(handle);
  }
}
