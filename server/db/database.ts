import knexFactory, { type Knex } from "knex";
import pg from "pg";
import type { Config } from "../config.ts";
import type { Logger } from "../logger.ts";
import { DataDirLock, lockPath } from "./data-dir-lock.ts";
import { startEmbeddedPostgres } from "./embedded.ts";
import { migrationSource } from "./migrations/index.ts";
import { localNotifications, postgresNotifications, type Notifications } from "./notifications.ts";

// timestamptz and bigint come back as Date and string by default; ids and counts we keep as such,
// but int8 counts (count(*)) are small enough to be numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export interface Database {
  kind: "embedded" | "postgres";
  /** Connection URL (for graphile-worker and the rate limiter's pool). */
  url: string;
  knex: Knex;
  /** A small pg pool for code that speaks pg directly. */
  pool: pg.Pool;
  /** Cross-process signals: LISTEN/NOTIFY on PostgreSQL, an in-process bus on the embedded default. */
  notifications: Notifications;
  migrate: () => Promise<void>;
  ping: () => Promise<void>;
  close: () => Promise<void>;
}

export class StartupError extends Error {
  override name = "StartupError";
}

/** Opens the configured database: `DATABASE_URL`, or the embedded PGlite default. */
export async function openDatabase(config: Config, log: Logger): Promise<Database> {
  let url = config.databaseUrl;
  let stopEmbedded: (() => Promise<void>) | undefined;
  if (!url) {
    const dir = config.embeddedDbInMemory ? undefined : `${config.dataDir}/db`;
    const started = Date.now();
    const lock = dir === undefined ? undefined : lockDataDir(dir);
    let embedded;
    try {
      embedded = await startEmbeddedPostgres(dir, config.embeddedDbPort);
    } catch (error) {
      lock?.release();
      throw error;
    }
    lock?.recordPort(Number(new URL(embedded.url).port));
    url = embedded.url;
    stopEmbedded = async () => {
      await embedded.stop();
      lock?.release();
    };
    log.info({ dataDir: dir ?? "(in memory)", ms: Date.now() - started }, "embedded database (PGlite with pgvector) started");
  }
  const knex = knexFactory({
    client: "pg",
    connection: url,
    pool: { min: 0, max: config.databasePoolMax },
    migrations: { migrationSource, tableName: "knex_migrations" },
    // knex logs to the console by default; its warnings (e.g. a refused connection) go to pino instead.
    log: {
      warn: (message: unknown) => log.warn({ component: "knex" }, String(message)),
      error: (message: unknown) => log.error({ component: "knex" }, String(message)),
      deprecate: (method: string, alternative: string) => log.warn({ component: "knex" }, `${method} is deprecated, use ${alternative}`),
      debug: (message: unknown) => log.debug({ component: "knex" }, String(message)),
    },
  });
  const pool = new pg.Pool({ connectionString: url, max: config.databasePoolMax });
  pool.on("error", (error) => log.warn({ err: error }, "idle database connection failed"));
  // A connection that breaks while checked out must not crash the process; its query fails instead.
  pool.on("connect", (client) => client.on("error", (error) => log.warn({ err: error }, "database connection failed")));
  const notifications = config.databaseUrl ? postgresNotifications(url, knex, log) : localNotifications();
  const close = async () => {
    await Promise.allSettled([notifications.close(), knex.destroy(), pool.end()]);
    await stopEmbedded?.();
  };
  try {
    await knex.raw("select 1");
  } catch (error) {
    await close();
    throw new StartupError(`Cannot connect to the database at ${redact(url)}: ${(error as Error).message}`);
  }
  if (config.databaseUrl) await requireVector(knex, url, close);
  return {
    kind: config.databaseUrl ? "postgres" : "embedded",
    url,
    knex,
    pool,
    notifications,
    migrate: async () => {
      const [, applied] = (await knex.migrate.latest()) as [number, string[]];
      if (applied.length) log.info({ migrations: applied }, "database migrated");
    },
    ping: async () => {
      await knex.raw("select 1");
    },
    close,
  };
}

/** The data dir's lock, or a start-up error naming the process that holds it and how to share. */
function lockDataDir(dir: string): DataDirLock {
  const lock = DataDirLock.acquire(dir);
  if (lock instanceof DataDirLock) return lock;
  const served = lock.port ? ` on postgres://postgres@127.0.0.1:${lock.port}/postgres` : "";
  throw new StartupError(
    `The embedded database in ${dir} is in use by process ${lock.pid} (since ${lock.since})${served}. ` +
      "Two processes on one data dir lose data, so this one stops. To run a second server on the same data, " +
      "start the first with a fixed EMBEDDED_DB_PORT and give the second DATABASE_URL=postgres://postgres@127.0.0.1:<that port>/postgres; " +
      "or use another PERSONA_DATA_DIR, or PostgreSQL. " +
      `If no persona process is running, the lock ${lockPath(dir)} is left over: delete it.`,
  );
}

async function requireVector(knex: Knex, url: string, close: () => Promise<void>): Promise<void> {
  const result = await knex.raw<{ rows: { installed: string | null; available: string | null }[] }>(
    `select (select extversion from pg_extension where extname = 'vector') as installed,
            (select default_version from pg_available_extensions where name = 'vector') as available`,
  );
  const row = result.rows[0];
  if (row?.installed || row?.available) return;
  await close();
  throw new StartupError(
    `The PostgreSQL server at ${redact(url)} does not have the pgvector extension ("vector"). ` +
      "Install pgvector 0.8 for this server (e.g. the postgresql-15-pgvector package, or build it from source) and restart.",
  );
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]+@/, "//$1:***@");
}
