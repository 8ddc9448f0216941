import type * as OpenTelemetry from "@opentelemetry/api";

/** OpenTelemetry's API module, as the SDK's loader hands it over. */
export type OpenTelemetryApi = typeof OpenTelemetry;

/** What the service's own spans are made with, once the SDK runs. */
export interface ActiveTracing {
  api: OpenTelemetryApi;
  tracer: OpenTelemetry.Tracer;
  /** Exports the spans the SDK still holds in its batch. */
  flush: () => Promise<void>;
}

let active: ActiveTracing | undefined;

/**
 * The OpenTelemetry API and the service's tracer while traces are on, else undefined. Every hook of
 * the service (jobs, the model, webhooks, logs) asks here first: with traces off the SDK is not
 * loaded, the hooks need nothing of OpenTelemetry (its API's types are imported as types only), and
 * a hook costs one call and one comparison, handing back what it was given.
 */
export function activeTracing(): ActiveTracing | undefined {
  return active;
}

/** Called once by the SDK's loader (sdk.ts), before the service's modules run. */
export function activateTracing(tracing: ActiveTracing): void {
  active = tracing;
}

/** How long the last spans may take to leave: an unreachable collector must not hold a stopping process. */
const FLUSH_MS = 5_000;

/**
 * Sends the spans still batched (the SDK exports every few seconds), waiting at most `FLUSH_MS`:
 * the last step of a service's stop, as its process exits next. Nothing while traces are off.
 */
export async function flushTraces(): Promise<void> {
  if (!active) return;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, FLUSH_MS).unref()));
  await Promise.race([active.flush().catch(() => undefined), late]);
  clearTimeout(timer);
}
