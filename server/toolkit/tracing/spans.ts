import type { Attributes, Context, Span } from "@opentelemetry/api";
import { activeTracing, type ActiveTracing } from "./active.ts";
import { linkTo } from "./carrier.ts";

/** A span of the service's own: its name, kind, attributes and the `traceparent`s it links to. */
export interface SpanSpec {
  name: string;
  kind?: "internal" | "client" | "producer" | "consumer";
  attributes?: Attributes;
  /** Contexts of the work this span continues (a queued job's requester): absent or malformed ones are skipped. */
  links?: readonly unknown[];
  /** Starts a trace of its own (a job), rather than a child of whatever span happens to be active. */
  root?: boolean;
}

/** The options `tracer.startSpan` takes for `spec`. */
export function spanOptions({ api }: ActiveTracing, spec: Omit<SpanSpec, "name">) {
  const kinds = { internal: api.SpanKind.INTERNAL, client: api.SpanKind.CLIENT, producer: api.SpanKind.PRODUCER, consumer: api.SpanKind.CONSUMER };
  const links = (spec.links ?? []).map(linkTo).filter((link) => link !== undefined);
  return { kind: kinds[spec.kind ?? "internal"], ...(spec.attributes ? { attributes: spec.attributes } : {}), ...(links.length ? { links } : {}), ...(spec.root ? { root: true } : {}) };
}

/** An aborted call (the caller's signal) is no failure of the span's work. */
const isAbort = (error: unknown) => (error as { name?: string } | undefined)?.name === "AbortError";

/** Marks `span` failed by `error` (an abort is recorded as such, not as an error). */
export function spanFailed({ api }: ActiveTracing, span: Span, error: unknown): void {
  if (isAbort(error)) {
    span.setAttribute("persona.aborted", true);
    return;
  }
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}

/**
 * Runs `work` inside a span of `spec` (a child of the active span, unless `root`), ending it when the
 * work settles; with traces off, just runs it.
 */
export function inSpan<T>(spec: SpanSpec, work: () => Promise<T>): Promise<T> {
  const tracing = activeTracing();
  if (!tracing) return work();
  return tracing.tracer.startActiveSpan(spec.name, spanOptions(tracing, spec), async (span) => {
    try {
      return await work();
    } catch (error) {
      spanFailed(tracing, span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/**
 * `iterator` read inside `span`: each read runs in the `inside` context, so the calls it makes (an
 * upstream HTTP request) are the span's children. The span ends once: when the iterator is done or
 * fails (marked failed), when its reader returns early, or when `onValue` answers true (the value
 * that completes the work). `onEnd` runs first, told whether the reader left early.
 */
export function readInSpan<T>(
  tracing: ActiveTracing,
  span: Span,
  inside: Context,
  iterator: AsyncIterator<T>,
  hooks: { onValue?: (value: T) => boolean | void; onEnd?: (early: boolean) => void } = {},
): AsyncIterator<T> {
  let over = false;
  const end = (early: boolean) => {
    if (over) return;
    over = true;
    hooks.onEnd?.(early);
    span.end();
  };
  return {
    next: () =>
      tracing.api.context.with(inside, () => iterator.next()).then(
        (result) => {
          if (result.done || hooks.onValue?.(result.value) === true) end(false);
          return result;
        },
        (error: unknown) => {
          spanFailed(tracing, span, error);
          end(false);
          throw error;
        },
      ),
    return: (value?: unknown) => {
      end(true);
      return iterator.return ? tracing.api.context.with(inside, () => iterator.return!(value)) : Promise.resolve({ done: true as const, value: undefined });
    },
  };
}

/** Adds `attributes` to the active span and, with `failure`, marks it failed for that reason; nothing with traces off. */
export function annotateSpan(attributes: Attributes, failure?: string): void {
  const tracing = activeTracing();
  const span = tracing?.api.trace.getActiveSpan();
  if (!tracing || !span) return;
  span.setAttributes(attributes);
  if (failure) span.setStatus({ code: tracing.api.SpanStatusCode.ERROR, message: failure });
}

/**
 * `headers` with the active span's context added as the configured propagators write it (W3C
 * `traceparent` by default), for a call the HTTP instrumentation may not see; the same object with
 * traces off.
 */
export function withTraceHeaders(headers: Record<string, string>): Record<string, string> {
  const tracing = activeTracing();
  if (!tracing) return headers;
  const carried = { ...headers };
  tracing.api.propagation.inject(tracing.api.context.active(), carried);
  return carried;
}
