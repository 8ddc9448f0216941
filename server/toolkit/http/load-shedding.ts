import type { RequestHandler } from "express";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { refused } from "../metrics/http.ts";
import { rateLimited } from "./error-catalogue.ts";
import type { ApiError } from "./errors.ts";

const WINDOW_MS = 250;
const RETRY_AFTER_SECONDS = 1;
// Probes and documentation carry no 429 in the contract, and a load balancer must still see them.
export const EXEMPT = new Set(["/", "/healthz", "/readyz", "/metrics", "/docs", "/openapi.yaml", "/openapi.json"]);

/**
 * Refuses new requests with 429 and Retry-After, before any work (even the rate limiter's database
 * round trip), while the event loop's delay (p99 over the last 250 ms) is above `thresholdMs`:
 * past that point every admitted request only waits longer, and timeouts hit everyone instead of
 * the excess. 429 rather than 503 because clients (and the SDK) already back off on 429 with
 * Retry-After, and the overload rule admits only 2xx or 429. 0 turns it off.
 */
export function loadShedding(thresholdMs: number): RequestHandler {
  if (thresholdMs <= 0) return (_req, _res, next) => next();
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  let shedding = false;
  const timer = setInterval(() => {
    shedding = histogram.percentile(99) / 1e6 > thresholdMs;
    histogram.reset();
  }, WINDOW_MS);
  timer.unref();
  return (req, _res, next) => {
    if (!shedding || EXEMPT.has(req.path)) return next();
    refused("load_shed");
    next(overloaded());
  };
}

/** The answer of a shed request: 429 with Retry-After, in the envelope. */
export function overloaded(): ApiError {
  return rateLimited(`The service is overloaded; retry in ${RETRY_AFTER_SECONDS} s`, RETRY_AFTER_SECONDS);
}
