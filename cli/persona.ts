#!/usr/bin/env node
// The `persona` command line. Server commands (serve, worker, migrate) start server parts of this
// package; the administrative commands arrive with the SDK.
import { Command } from "commander";
import { ConfigError, loadConfig } from "../server/config.ts";
import { openDatabase, StartupError } from "../server/db/database.ts";
import { createLogger } from "../server/logger.ts";
import { runUntilSignal } from "../server/process.ts";
import { startService } from "../server/runtime.ts";

const program = new Command()
  .name("persona")
  .description("Persona: conversational AI characters. Settings come from the environment (see README).")
  .showHelpAfterError();

program
  .command("serve")
  .description("Run the HTTP API (with an in-process job worker unless --no-worker)")
  .option("--no-worker", "do not run jobs in this process; run `persona worker` separately")
  .option("-p, --port <port>", "port to listen on (overrides PORT)")
  .action(async (options: { worker: boolean; port?: string }) => {
    const config = loadConfig({ ...process.env, ...(options.port ? { PORT: options.port } : {}) });
    config.worker.enabled = options.worker;
    const service = await startService(config);
    runUntilSignal(service.stop, service.services.log);
  });

program
  .command("worker")
  .description("Run only the job worker (scale out next to `persona serve --no-worker`)")
  .action(async () => {
    const config = loadConfig();
    config.worker.enabled = true;
    const service = await startService(config, { http: false });
    runUntilSignal(service.stop, service.services.log);
  });

program
  .command("migrate")
  .description("Apply pending database migrations, then exit")
  .action(async () => {
    const config = loadConfig();
    const log = createLogger(config);
    const db = await openDatabase(config, log);
    try {
      await db.migrate();
      log.info("migrations are up to date");
    } finally {
      await db.close();
    }
  });

try {
  await program.parseAsync();
} catch (error) {
  if (error instanceof ConfigError || error instanceof StartupError) {
    process.stderr.write(`persona: ${error.message}\n`);
    process.exit(1);
  }
  throw error;
}
