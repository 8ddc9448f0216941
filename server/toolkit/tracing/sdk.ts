import { createRequire, syncBuiltinESMExports } from "node:module";
import * as api from "@opentelemetry/api";
import { HttpInstrumentation } from "@opentelemetry/instrumentation-http";
import { PgInstrumentation } from "@opentelemetry/instrumentation-pg";
import { UndiciInstrumentation } from "@opentelemetry/instrumentation-undici";
import { startNodeSdk } from "@opentelemetry/sdk-node";
import { activateTracing } from "./active.ts";
import { httpTracing } from "./requests.ts";

/**
 * Starts OpenTelemetry's Node SDK for traces only, configured by the standard OTEL_* variables
 * (exporter endpoint, protocol, headers, sampler, service name, batching), with the
 * instrumentations of what the service calls: HTTP (its own requests, webhook receivers and the
 * chat platforms), fetch (the model and embeddings servers, through undici) and pg (every
 * statement, knex's and the chat path's direct ones). Loaded only when traces are on (start.ts).
 */
export function startSdk(env: NodeJS.ProcessEnv): void {
  const named = Boolean(env.OTEL_SERVICE_NAME?.trim()) || /(?:^|,)\s*service\.name\s*=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? "");
  startNodeSdk({
    instrumentations: [
      new HttpInstrumentation(httpTracing),
      new UndiciInstrumentation({ requireParentforSpans: true }),
      // Statements outside any span are the worker's polling and the pools' upkeep: noise, not traces.
      new PgInstrumentation({ requireParentSpan: true, ignoreConnectSpans: true }),
    ],
    // Traces only: the service's metrics are Prometheus's (METRICS_PORT), its logs are pino's.
    metricReaders: [],
    logRecordProcessors: [],
    ...(named ? {} : { resourceAttributes: { "service.name": "persona" } }),
  });
  // The HTTP instrumentation patches `http` and `https` when they are next required; modules of the
  // service that imported them before (the listener, the webhook sender) see the patch once their
  // ES module bindings are synced with the patched CommonJS exports.
  const require = createRequire(import.meta.url);
  require("node:http");
  require("node:https");
  syncBuiltinESMExports();
  // The SDK's tracer provider, behind the API's proxy: its forceFlush sends the batch at a stop.
  const provider = (api.trace.getTracerProvider() as api.ProxyTracerProvider).getDelegate() as api.TracerProvider & { forceFlush?: () => Promise<void> };
  activateTracing({ api, tracer: api.trace.getTracer("persona"), flush: async () => provider.forceFlush?.() });
}
