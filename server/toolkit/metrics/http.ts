import type { Request, RequestHandler, Response } from "express";
import { Counter, Gauge, Histogram } from "prom-client";
import { metricsOn, registry, SECONDS } from "./registry.ts";

// What the HTTP side counts: requests by operation and status, open event streams, refusals.

/**
 * The operation whose route matched the request, as its first stage set it (http/router.ts's
 * `operationIdOf`, read here without importing the router, which would close an import cycle
 * through services.ts and stream-limits.ts).
 */
const operationOf = (req: Request): string => (req as Request & { openapi?: { schema?: { operationId?: string } } }).openapi?.schema?.operationId ?? "unknown";

const requests = new Counter({
  name: "persona_http_requests_total",
  help: "Requests answered, by operationId (`unknown`: a path or method the contract does not have, or a request refused before its route was matched: rate limit, load shedding) and status (499: the client left before an answer).",
  labelNames: ["operation", "status"] as const,
  registers: [registry],
});

const durations = new Histogram({
  name: "persona_http_request_duration_seconds",
  help: "From a request's arrival to its response's end (a stream's whole life), by operationId and status.",
  labelNames: ["operation", "status"] as const,
  buckets: [...SECONDS],
  registers: [registry],
});

const streams = new Gauge({
  name: "persona_sse_streams_open",
  help: "Server-sent event streams open in this process, by the operation that opened them (chat replies, resumed generations, room events, OpenAI streams).",
  labelNames: ["operation"] as const,
  registers: [registry],
});

const refusals = new Counter({
  name: "persona_refusals_total",
  help: "Requests refused with 429 before their work, by reason: rate_limit (RATE_LIMIT_PER_MINUTE), admission_full and admission_timeout (ADMISSION_*), load_shed (LOAD_SHED_DELAY_MS), stream_limit (STREAMS_PER_USER).",
  labelNames: ["reason"] as const,
  registers: [registry],
});

const REASONS = ["rate_limit", "admission_full", "admission_timeout", "load_shed", "stream_limit"] as const;
export type RefusalReason = (typeof REASONS)[number];
// Every reason's series from the start, at 0: a rate over them needs no first refusal.
for (const reason of REASONS) refusals.inc({ reason }, 0);

/** Counts a refusal (a one-line call where each limit refuses). */
export function refused(reason: RefusalReason): void {
  if (metricsOn()) refusals.inc({ reason });
}

/** The request and duration series of one operation and status, found once and kept: no label hashing per request. */
interface Series {
  count: Counter.Internal;
  duration: Histogram.Internal<"operation" | "status">;
}
const series = new Map<string, Series>();

function seriesOf(operation: string, status: string): Series {
  const key = `${operation} ${status}`;
  let found = series.get(key);
  if (!found) {
    found = { count: requests.labels(operation, status), duration: durations.labels(operation, status) };
    series.set(key, found);
  }
  return found;
}

const STARTED = Symbol("metrics: request start");
type Timed = Request & { [STARTED]?: number };

/** One function for every response ('close' gives the response as `this`): no closure per request. */
function completed(this: Response): void {
  const req = this.req as Timed;
  const started = req[STARTED];
  if (started === undefined) return;
  const status = this.headersSent ? String(this.statusCode) : "499";
  const { count, duration } = seriesOf(operationOf(req), status);
  count.inc();
  duration.observe((performance.now() - started) / 1000);
}

/**
 * The app's first stage while metrics are on: times every request and counts it by the operation
 * its route matched (known once the request has gone through the router) when its response closes.
 */
export function requestMetrics(): RequestHandler[] {
  if (!metricsOn()) return [];
  return [
    (req: Timed, res, next) => {
      req[STARTED] = performance.now();
      // `on`, not `once`: 'close' is emitted once, and `once` wraps the listener anew for every request.
      res.on("close", completed);
      next();
    },
  ];
}

/** Counts an event stream while it is open, by the operation of its request (a one-line call where a stream opens). */
export function streamOpened(res: Response): void {
  if (!metricsOn()) return;
  const operation = operationOf(res.req);
  streams.inc({ operation });
  res.once("close", () => streams.dec({ operation }));
}
