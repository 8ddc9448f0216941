// `npm start`: the API with its in-process worker, configured from the environment.
import { ConfigError, loadConfig } from "./config.ts";
import { StartupError } from "./db/database.ts";
import { startService } from "./runtime.ts";
import { runUntilSignal } from "./process.ts";

try {
  const service = await startService(loadConfig());
  runUntilSignal(service.stop, service.services.log);
} catch (error) {
  if (error instanceof ConfigError || error instanceof StartupError) {
    process.stderr.write(`persona: ${error.message}\n`);
    process.exit(1);
  }
  throw error;
}
