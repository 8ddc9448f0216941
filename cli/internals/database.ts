import type { Logger } from "../../server/toolkit/logger.ts";
import type { Services } from "../../server/toolkit/services.ts";
import { CliError } from "../errors.ts";

// The server's modules (knex, pg, PGlite, express…) take seconds to load; they are imported only
// by the commands that need them, so that the API commands start fast.

/** Warnings and errors on stderr, so that they never mix into --json output on stdout. */
export async function stderrLogger(): Promise<Logger> {
  const { default: pino } = await import("pino");
  return pino({ level: "warn", base: { service: "persona-cli" } }, pino.destination(2));
}

/**
 * Runs `work` with the areas' services on the service's own database, configured exactly as the
 * server is (DATABASE_URL, or the embedded default in PERSONA_DATA_DIR), without a listener or a
 * worker (server/admin-runtime.ts). Used by the operator commands whose actions have no API
 * endpoint: accounts' plans, OAuth client registration, the e-mail outbox, the featured shelf. On
 * the embedded default with a server running, the command attaches to the database that server
 * serves (its data-dir lock names the directory of its socket, which only their common user may
 * enter): a second process must never open the dir itself.
 */
export async function withServerServices<T>(work: (services: Services) => Promise<T>): Promise<T> {
  const [{ loadConfig }, { openServices }, { liveHolder }, { embeddedDatabaseUrl }] = await Promise.all([
    import("../../server/toolkit/config.ts"),
    import("../../server/admin-runtime.ts"),
    import("../../server/toolkit/db/data-dir-lock.ts"),
    import("../../server/toolkit/db/embedded-socket.ts"),
  ]);
  let config = loadConfig();
  if (!config.databaseUrl && !config.embeddedDbInMemory) {
    const holder = liveHolder(`${config.dataDir}/db`);
    if (holder) {
      if (!holder.socket) throw new CliError(`the server (process ${holder.pid}) is still starting; try again in a moment`);
      config = { ...config, databaseUrl: embeddedDatabaseUrl(holder.socket) };
    }
  }
  let services: Awaited<ReturnType<typeof openServices>> | undefined;
  try {
    services = await openServices(config, await stderrLogger());
    return await work(services);
  } catch (error) {
    // 42P01 undefined_table: the database exists but has never been migrated.
    if ((error as { code?: string }).code === "42P01") {
      throw new CliError("the database has no schema yet: run `persona migrate` (or start the server once) first");
    }
    throw error;
  } finally {
    await services?.close();
  }
}
