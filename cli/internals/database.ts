import type { Knex } from "knex";
import type { Logger } from "../../server/logger.ts";
import { CliError } from "../errors.ts";

// The server's modules (knex, pg, PGlite, express…) take seconds to load; they are imported only
// by the commands that need them, so that the API commands start fast.

/** Warnings and errors on stderr, so that they never mix into --json output on stdout. */
export async function stderrLogger(): Promise<Logger> {
  const { default: pino } = await import("pino");
  return pino({ level: "warn", base: { service: "persona-cli" } }, pino.destination(2));
}

/**
 * Runs `work` on the service's own database, configured exactly as the server is (DATABASE_URL, or
 * the embedded default in PERSONA_DATA_DIR). Used by the admin commands whose data has no API
 * endpoint: OAuth client registration and the e-mail outbox.
 */
export async function withServerDatabase<T>(work: (knex: Knex) => Promise<T>): Promise<T> {
  const [{ loadConfig }, { openDatabase }] = await Promise.all([import("../../server/config.ts"), import("../../server/db/database.ts")]);
  const db = await openDatabase(loadConfig(), await stderrLogger());
  try {
    return await work(db.knex);
  } catch (error) {
    // 42P01 undefined_table: the database exists but has never been migrated.
    if ((error as { code?: string }).code === "42P01") {
      throw new CliError("the database has no schema yet: run `persona migrate` (or start the server once) first");
    }
    throw error;
  } finally {
    await db.close();
  }
}
