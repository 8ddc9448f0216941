import { activeTracing } from "./active.ts";

/**
 * The fields that tie a log line to its trace, for pino's `mixin` (OpenTelemetry's names for them
 * in JSON logs): the active span's trace and span ids and its flags. Undefined while traces are
 * off, so that the logger is made without a mixin at all.
 */
export function traceLogFields(): (() => Record<string, string>) | undefined {
  const tracing = activeTracing();
  if (!tracing) return undefined;
  const none = {};
  return () => {
    const context = tracing.api.trace.getActiveSpan()?.spanContext();
    if (!context || !tracing.api.isSpanContextValid(context)) return none;
    return { trace_id: context.traceId, span_id: context.spanId, trace_flags: `0${context.traceFlags.toString(16)}`.slice(-2) };
  };
}
