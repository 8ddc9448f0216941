import type { Link } from "@opentelemetry/api";
import { activeTracing } from "./active.ts";

/**
 * A span's context as a W3C `traceparent` (version 00), the form in which work queued now carries
 * the context of the span that queued it: in a job's payload (`JOB_TRACE_KEY`) and on an outbox
 * event's row (`trace_context`), from which its webhook fan-out job takes it. Written and read here
 * whatever propagators OTEL_PROPAGATORS names: it never leaves the service.
 */
const TRACEPARENT = /^00-([\da-f]{32})-([\da-f]{16})-([\da-f]{2})$/;

/** The payload field of a job that holds the `traceparent` of the span that queued it. */
export const JOB_TRACE_KEY = "_traceparent";

/** The active span's context as a `traceparent`; undefined with traces off or no span active. */
export function currentTraceparent(): string | undefined {
  const tracing = activeTracing();
  if (!tracing) return undefined;
  const context = tracing.api.trace.getActiveSpan()?.spanContext();
  if (!context || !tracing.api.isSpanContextValid(context)) return undefined;
  return `00-${context.traceId}-${context.spanId}-${(context.traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}

/**
 * A job's payload carrying the active span's context (`JOB_TRACE_KEY`), so that the job's span
 * links to the request or job that queued it; the payload itself when there is none to carry.
 */
export function withTraceparent(payload: Record<string, unknown>): Record<string, unknown> {
  const traceparent = currentTraceparent();
  return traceparent ? { ...payload, [JOB_TRACE_KEY]: traceparent } : payload;
}

/** A link to the span a `traceparent` names; undefined for anything else (absent, malformed). */
export function linkTo(traceparent: unknown): Link | undefined {
  if (typeof traceparent !== "string") return undefined;
  const parts = TRACEPARENT.exec(traceparent);
  if (!parts || /^0+$/.test(parts[1]!) || /^0+$/.test(parts[2]!)) return undefined;
  return { context: { traceId: parts[1]!, spanId: parts[2]!, traceFlags: Number.parseInt(parts[3]!, 16), isRemote: true } };
}
