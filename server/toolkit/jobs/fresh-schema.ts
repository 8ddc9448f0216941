import { loadConfig } from "../config.ts";
import { openDatabase } from "../db/database.ts";
import type { Logger } from "../logger.ts";
import { openJobQueue } from "./queue.ts";

/**
 * Gives the PostgreSQL database at `url` the schema a server started there would make: the
 * service's migrations, then graphile-worker's (opening the job queue installs it). Only `url` is
 * read, whatever else the environment sets (a pooler, a listen URL): for `persona db move`'s target
 * and the tests' template database.
 */
export async function makeSchemaAt(url: string, log: Logger): Promise<void> {
  const db = await openDatabase(loadConfig({ DATABASE_URL: url, LOG_LEVEL: "warn" }), log);
  try {
    await db.migrate();
    await (await openJobQueue(db, log)).release();
  } finally {
    await db.close();
  }
}
