// `npm start`: the API with its in-process worker, configured from the environment.
import { enableCompileCache } from "node:module";
import { ConfigError, loadConfig } from "./toolkit/config.ts";
import { startEmbeddedDatabase } from "./toolkit/db/embedded.ts";
import { StartupError } from "./toolkit/db/startup-error.ts";
import { bindServer } from "./toolkit/http/listener.ts";
import { startTracing } from "./toolkit/tracing/start.ts";
import { handleSignals, runUntilSignal } from "./process.ts";

// V8 keeps the compiled code of every module on disk, so a restart skips most of the parsing.
enableCompileCache();
// Before anything slow: a SIGTERM during start-up ends the process (as PID 1 it would be ignored).
handleSignals();

try {
  const config = loadConfig();
  // The port first: one in use is reported at once, before anything of the database is created.
  const bound = await bindServer(config);
  // The embedded database loads and opens in its own thread while this one loads the service.
  const embedded = config.databaseUrl ? undefined : startEmbeddedDatabase(config);
  embedded?.catch(() => undefined);
  // Traces, when OTEL_* settings ask for them, before the service's modules, whose pg and http they instrument.
  await startTracing();
  const { startService } = await import("./runtime.ts");
  const service = await startService(config, { bound, embedded });
  runUntilSignal(service.stop, service.services.log);
} catch (error) {
  if (error instanceof ConfigError || error instanceof StartupError) {
    process.stderr.write(`persona: ${error.message}\n`);
    process.exit(1);
  }
  throw error;
}
