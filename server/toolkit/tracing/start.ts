import { activeTracing } from "./active.ts";
import { tracingWanted } from "./settings.ts";

/**
 * Starts traces when the OTEL_* settings ask for them (settings.ts), else loads nothing of
 * OpenTelemetry. Called by an entry point before it imports the service's modules, so that the
 * instrumentations are in place when pg and http load; once per process (a second call finds it
 * running). A stopping service sends what is left (`flushTraces`, in runtime.ts's stop).
 */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (!tracingWanted(env) || activeTracing()) return;
  const { startSdk } = await import("./sdk.ts");
  startSdk(env);
}
