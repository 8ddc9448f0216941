import knexFactory, { type Knex } from "knex";
import pg from "pg";
import type { Config } from "../config.ts";
import type { Logger } from "../logger.ts";
import { clusterNotifications } from "./cluster-notifications.ts";
import { startEmbeddedDatabase, type EmbeddedDatabase } from "./embedded.ts";
import { migrationSource } from "./migrations/index.ts";
import { listenReachesDatabase } from "./listen-check.ts";
import { localNotifications, postgresNotifications, type Notifications } from "./notifications.ts";
import { sendUnnamed } from "./statement-names.ts";
import { preparesStatements } from "./prepared.ts";
import { readRouting, type ReadRouting } from "./read-routing.ts";
import { StartupError } from "./startup-error.ts";

export { StartupError };

// timestamptz and bigint come back as Date and string by default; ids and counts we keep as such,
// but int8 counts (count(*)) are small enough to be numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export interface Database {
  kind: "embedded" | "postgres";
  /** Connection URL (for graphile-worker and the rate limiter's pool). */
  url: string;
  /**
   * A direct (session) connection URL to the same database: `DATABASE_LISTEN_URL`, else `url`. What
   * a pooler in transaction mode cannot carry goes there: LISTEN, session advisory locks.
   */
  listenUrl: string;
  knex: Knex;
  /** A small pg pool for code that speaks pg directly. */
  pool: pg.Pool;
  /**
   * A pool on `listenUrl`, for code that needs one server session for longer than a transaction
   * (the job worker's LISTEN and its liveness locks); `pool` itself when there is no pooler.
   */
  sessionPool: pg.Pool;
  /** Where lag-tolerant reads run: present when `DATABASE_REPLICA_URLS` names hot standbys (read-routing.ts). */
  reads: ReadRouting | undefined;
  /** Cross-process signals: LISTEN/NOTIFY on PostgreSQL, an in-process bus on the embedded default. */
  notifications: Notifications;
  migrate: () => Promise<void>;
  ping: () => Promise<void>;
  close: () => Promise<void>;
}

/**
 * Opens the configured database: `DATABASE_URL`, or the embedded PGlite default (`embedded`, when
 * the caller started it early with `startEmbeddedDatabase`; else started here).
 */
export async function openDatabase(
  config: Config,
  log: Logger,
  options: { embedded?: Promise<EmbeddedDatabase>; sharedEmbeddedUrl?: string } = {},
): Promise<Database> {
  let url = config.databaseUrl ?? options.sharedEmbeddedUrl;
  // Only a real server's URL has a direct twin; on the embedded database every connection is one session anyway.
  const listenUrl = config.databaseUrl ? (config.databaseListenUrl ?? config.databaseUrl) : undefined;
  let stopEmbedded: (() => Promise<void>) | undefined;
  if (!url) {
    const embedded = await (options.embedded ?? startEmbeddedDatabase(config));
    url = embedded.url;
    stopEmbedded = embedded.stop;
    log.info(
      { dataDir: embedded.dir ?? "(in memory)", ms: Date.now() - embedded.startedAt, ...embedded.timings },
      "embedded database (PGlite with pgvector) started",
    );
  }
  const knex = knexFactory({
    client: "pg",
    connection: url,
    pool: {
      min: 0,
      max: config.databasePoolMax,
      ...(config.databasePreparedStatements ? {} : { afterCreate: (connection: pg.Client, done: (error: Error | null, connection: pg.Client) => void) => done(null, unnamed(connection)) }),
    },
    migrations: { migrationSource, tableName: "knex_migrations" },
    // knex logs to the console by default; its warnings (e.g. a refused connection) go to pino instead.
    log: {
      warn: (message: unknown) => log.warn({ component: "knex" }, String(message)),
      error: (message: unknown) => log.error({ component: "knex" }, String(message)),
      deprecate: (method: string, alternative: string) => log.warn({ component: "knex" }, `${method} is deprecated, use ${alternative}`),
      debug: (message: unknown) => log.debug({ component: "knex" }, String(message)),
    },
  });
  // Statements the chat path repeats are prepared once per connection, on PostgreSQL only (prepared.ts),
  // unless DATABASE_PREPARED_STATEMENTS is off (a transaction pooler): then the connections below
  // also send unnamed whatever a caller or a library names.
  if (config.databaseUrl && config.databasePreparedStatements) preparesStatements(knex);
  const openPool = (connectionString: string) => {
    const opened = new pg.Pool({ connectionString, max: config.databasePoolMax });
    opened.on("error", (error) => log.warn({ err: error }, "idle database connection failed"));
    opened.on("connect", (client) => {
      // A connection that breaks while checked out must not crash the process; its query fails instead.
      client.on("error", (error) => log.warn({ err: error }, "database connection failed"));
      if (!config.databasePreparedStatements) unnamed(client);
    });
    return opened;
  };
  const pool = openPool(url);
  const sessionPool = listenUrl && listenUrl !== url ? openPool(listenUrl) : pool;
  // A worker of `serve --processes N` on the embedded database shares the primary's PGlite server.
  const notifications = listenUrl ? postgresNotifications(listenUrl, knex, log) : options.sharedEmbeddedUrl ? clusterNotifications() : localNotifications();
  let reads: ReadRouting | undefined;
  const close = async () => {
    await reads?.close();
    await Promise.allSettled([notifications.close(), knex.destroy(), endPool(pool, log), ...(sessionPool === pool ? [] : [endPool(sessionPool, log)])]);
    await stopEmbedded?.();
  };
  try {
    await knex.raw("select 1");
  } catch (error) {
    await close();
    throw new StartupError(`Cannot connect to the database at ${redact(url)}: ${(error as Error).message}`);
  }
  if (config.databaseUrl) await requireVector(knex, url, close);
  if (listenUrl && listenUrl !== url) await requireListenReach(knex, notifications, listenUrl, close);
  // Lag-tolerant reads on hot standbys, when there are any (read-routing.ts).
  if (config.databaseReplicaUrls.length > 0) {
    const replicas = { replicaUrls: config.databaseReplicaUrls, maxLagMs: config.databaseReplicaMaxLagMs, poolMax: config.databasePoolMax };
    reads = readRouting({ primary: knex, ...replicas, notifications, log });
  }
  return {
    reads,
    kind: config.databaseUrl ? "postgres" : "embedded",
    url,
    listenUrl: listenUrl ?? url,
    knex,
    pool,
    sessionPool,
    notifications,
    migrate: async () => {
      if (await upToDate(knex)) return;
      const [, applied] = (await knex.migrate.latest()) as [number, string[]];
      if (applied.length) log.info({ migrations: applied }, "database migrated");
    },
    ping: async () => {
      await knex.raw("select 1");
    },
    close,
  };
}

/**
 * Whether every migration is applied already, in one query: knex's own check takes about ten
 * round trips and a lock, which was a visible share of a restart on the embedded database.
 */
async function upToDate(knex: Knex): Promise<boolean> {
  const known = await migrationSource.getMigrations([]);
  try {
    const { rows } = await knex.raw<{ rows: { name: string }[] }>("select name from knex_migrations");
    const applied = new Set(rows.map((row) => row.name));
    return known.every((name) => applied.has(migrationSource.getMigrationName(name)));
  } catch {
    return false; // no migrations table yet: a new database
  }
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

/** `connection`, sending its statements unnamed (DATABASE_PREPARED_STATEMENTS off). */
function unnamed<C extends pg.ClientBase>(connection: C): C {
  sendUnnamed(connection);
  return connection;
}

async function requireListenReach(knex: Knex, notifications: Notifications, listenUrl: string, close: () => Promise<void>): Promise<void> {
  const problem = await listenReachesDatabase(knex, notifications).catch((error: unknown) => `cannot listen there: ${(error as Error).message}`);
  if (!problem) return;
  await close();
  throw new StartupError(`DATABASE_LISTEN_URL (${redact(listenUrl)}): ${problem}`);
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]+@/, "//$1:***@");
}

/** How long a close waits for the pool's checked-out connections to come back. */
const POOL_END_GRACE_MS = 5_000;

/**
 * Ends the pool, waiting at most POOL_END_GRACE_MS for connections still checked out: pg's
 * `pool.end()` waits for every one of them, and after a database outage one may never come back
 * (seen with PostgreSQL stopped and started under traffic: the stop then never finished). What is
 * left is named in the log and closed by the process's exit.
 */
async function endPool(pool: pg.Pool, log: Logger): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), POOL_END_GRACE_MS);
    timer.unref();
  });
  const ended = await Promise.race([pool.end().then(() => "ended" as const), late]);
  clearTimeout(timer);
  if (ended === "late") log.warn({ checkedOut: pool.totalCount - pool.idleCount, waitedMs: POOL_END_GRACE_MS }, "database connections still checked out at close: left to the process's exit");
}
