/**
 * Whether this process sends traces, from OpenTelemetry's standard variables (the SDK reads the
 * rest of them itself: service name, sampler, protocol, headers, batching). Traces are opt-in: on
 * only when an OTLP endpoint is named (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_ENDPOINT`), and never with `OTEL_SDK_DISABLED=true` or
 * `OTEL_TRACES_EXPORTER=none`. Read here, not in config.ts, because the decision is taken before
 * the service's modules load, and because these are the SDK's settings, not the service's.
 */
export function tracingWanted(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? "").split(",").map((name) => name.trim().toLowerCase());
  if (exporters.includes("none")) return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim());
}
