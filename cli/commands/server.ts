import { InvalidArgumentError, Option, type Command } from "commander";
import { examples } from "../help.ts";
import { stderrLogger } from "../internals/database.ts";
import { keepProcessAlive } from "../lifecycle.ts";

// Loaded on use: the server's modules take seconds to import, which the API commands should not pay.
const config = () => import("../../server/toolkit/config.ts");
const signals = () => import("../../server/process.ts");
// Traces (when OTEL_* settings ask for them) start before the server's modules, whose pg and http they instrument.
const tracing = async () => (await import("../../server/toolkit/tracing/start.ts")).startTracing();
const runtime = async () => {
  await tracing();
  return { ...(await import("../../server/runtime.ts")), ...(await signals()) };
};

function processCount(value: string): number {
  const count = Number(value);
  if (!Number.isInteger(count) || count < 1 || count > 64) throw new InvalidArgumentError("must be a whole number from 1 to 64");
  return count;
}

/**
 * serve, worker, migrate: these start parts of the server itself, configured from the environment
 * by server/toolkit/config.ts (see the README's settings table), not through the API.
 */
export function registerServerCommands(program: Command): void {
  program
    .command("serve")
    .description("Run the HTTP API (with an in-process job worker unless --no-worker)")
    .option("--no-worker", "do not run jobs in this process; run `persona worker` separately")
    .option("-p, --port <port>", "port to listen on (overrides PORT)")
    .addOption(new Option("--processes <n>", "API processes sharing the port and the database (one per core)").argParser(processCount).default(1))
    .addHelpText("after", examples(["persona serve", "persona serve --processes 2", "PORT=8080 DATABASE_URL=postgres://… persona serve --no-worker"]))
    .action(async (options: { worker: boolean; port?: string; processes: number }) => {
      const settings = (await config()).loadConfig({ ...process.env, ...(options.port ? { PORT: options.port } : {}) });
      settings.worker.enabled = options.worker;
      keepProcessAlive();
      const { isWorker } = (await import("node:cluster")).default;
      // A signal during start-up ends the process; the workers of a cluster take theirs from the primary.
      if (!isWorker) (await signals()).handleSignals();
      // The workers of `--processes N` run this same command and take their part from the primary.
      if (options.processes > 1 || isWorker) {
        if (isWorker) await tracing();
        const { serveCluster } = await import("../cluster.ts");
        await serveCluster(settings, options.processes);
        return;
      }
      const { startService, runUntilSignal } = await runtime();
      const service = await startService(settings);
      runUntilSignal(service.stop, service.services.log);
    });

  program
    .command("worker")
    .description("Run only the job worker (scale out next to `persona serve --no-worker`)")
    .addHelpText("after", examples(["DATABASE_URL=postgres://… persona worker"]))
    .action(async () => {
      (await signals()).handleSignals();
      const [{ loadConfig }, { startService, runUntilSignal }] = await Promise.all([config(), runtime()]);
      const settings = loadConfig();
      settings.worker.enabled = true;
      const service = await startService(settings, { http: false });
      keepProcessAlive();
      runUntilSignal(service.stop, service.services.log);
    });

  program
    .command("migrate")
    .description("Apply pending database migrations, then exit")
    .addHelpText("after", examples(["persona migrate", "DATABASE_URL=postgres://… persona migrate"]))
    .action(async (_options: unknown, command: Command) => {
      const json = Boolean(command.optsWithGlobals().json);
      const [{ loadConfig }, { openDatabase }, { createLogger }] = await Promise.all([
        config(),
        import("../../server/toolkit/db/database.ts"),
        import("../../server/toolkit/logger.ts"),
      ]);
      const settings = loadConfig();
      // With --json stdout carries only the result document, so the log moves to stderr.
      const log = json ? await stderrLogger() : createLogger(settings);
      const db = await openDatabase(settings, log);
      try {
        await db.migrate();
        if (json) process.stdout.write(`${JSON.stringify({ migrated: true, database: db.kind })}\n`);
        else log.info("migrations are up to date");
      } finally {
        await db.close();
      }
    });
}
