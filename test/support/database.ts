import { createHash, randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";

/**
 * Where tests run their database: `TEST_DATABASE_URL` (a PostgreSQL server with pgvector, on
 * which each service gets a database of its own) or, when unset, the embedded PGlite default.
 */
export const testDatabaseUrl = process.env.TEST_DATABASE_URL || undefined;
export const databaseKind = testDatabaseUrl ? "postgres" : "embedded";

/**
 * A pooler in transaction mode in front of TEST_DATABASE_URL's server (`TEST_DATABASE_POOLER_URL`,
 * e.g. scripts/ci/pgbouncer.sh): the services then connect through it, with their LISTEN and
 * session locks on a direct connection. The tests' own administration (creating and dropping
 * databases, the template's lock) stays direct.
 */
export const testPoolerUrl = (testDatabaseUrl && process.env.TEST_DATABASE_POOLER_URL) || undefined;

/**
 * The settings that put a service (in process or spawned) on the database at `url`: DATABASE_URL,
 * and behind the test pooler also DATABASE_POOLER and DATABASE_LISTEN_URL, the direct twin.
 */
export function databaseSettings(url: string): Record<string, string> {
  if (!testPoolerUrl) return { DATABASE_URL: url };
  const pooled = new URL(url);
  const pooler = new URL(testPoolerUrl);
  if (pooled.host !== pooler.host) return { DATABASE_URL: url };
  const direct = new URL(testDatabaseUrl!);
  direct.pathname = pooled.pathname;
  return { DATABASE_URL: url, DATABASE_POOLER: "transaction", DATABASE_LISTEN_URL: direct.toString() };
}

/**
 * The prefix of this run's databases: the globalSetup's teardown drops what is left under it (a
 * service shared by a worker's files is never closed by a file).
 */
export const RUN_DATABASE_PREFIX = `persona_test_${process.env.PERSONA_TEST_RUN ?? "local"}_`;

export interface TestDatabase {
  /** DATABASE_URL for the service, or undefined for the embedded default (through the test pooler when there is one). */
  url: string | undefined;
  drop: () => Promise<void>;
}

const root = join(import.meta.dirname, "..", "..");

/**
 * The migrated template's name: a digest of the migrations and of graphile-worker's version, so a
 * run of other migrations never clones a stale schema, and runs of the same code share one.
 */
function templateName(): string {
  const hash = createHash("sha256");
  const dir = join(root, "server", "toolkit", "db", "migrations");
  for (const file of readdirSync(dir).sort()) hash.update(file).update(readFileSync(join(dir, file)));
  // graphile-worker's `exports` do not name its package.json: it is read as a file.
  hash.update(readFileSync(join(root, "node_modules", "graphile-worker", "package.json")));
  return `persona_tpl_${hash.digest("hex").slice(0, 16)}`;
}

async function withAdmin<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: testDatabaseUrl });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

function urlOf(name: string, through: string = testDatabaseUrl!): string {
  const url = new URL(through);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * Makes the template once per server and code: migrated (the service's and graphile-worker's
 * schema) under a temporary name, then renamed, so a clone never meets half a schema. Concurrent
 * workers wait on one advisory lock; the loser finds the template made.
 */
async function ensureTemplate(): Promise<string> {
  const name = templateName();
  await withAdmin(async (admin) => {
    await admin.query("select pg_advisory_lock(hashtext('persona test template'))");
    try {
      const found = await admin.query("select 1 from pg_database where datname = $1", [name]);
      if (found.rowCount) return;
      const partial = `${name}_partial`;
      await admin.query(`DROP DATABASE IF EXISTS ${partial} WITH (FORCE)`);
      await admin.query(`CREATE DATABASE ${partial}`);
      await migrate(urlOf(partial));
      await admin.query(`ALTER DATABASE ${partial} RENAME TO ${name}`);
      // Templates of other migrations are not cloned by this code. One that a run of other code is
      // cloning right now is in use and stays (no FORCE): that run still needs it.
      const stale = await admin.query<{ datname: string }>("select datname from pg_database where datname like 'persona\\_tpl\\_%' and datname <> $1", [name]);
      for (const { datname } of stale.rows) await admin.query(`DROP DATABASE IF EXISTS ${datname}`).catch(() => undefined);
    } finally {
      await admin.query("select pg_advisory_unlock(hashtext('persona test template'))");
    }
  });
  return name;
}

async function migrate(url: string): Promise<void> {
  const [{ loadConfig }, { createLogger }, { makeSchemaAt }] = await Promise.all([
    import("../../server/toolkit/config.ts"),
    import("../../server/toolkit/logger.ts"),
    import("../../server/toolkit/jobs/fresh-schema.ts"),
  ]);
  await makeSchemaAt(url, createLogger(loadConfig({ LOG_LEVEL: "silent" })));
}

let template: Promise<string> | undefined;

/**
 * A fresh database of the kind under test, already migrated: on PostgreSQL a clone of the
 * template (`CREATE DATABASE … TEMPLATE`, a file copy, instead of every migration again).
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  if (!testDatabaseUrl) return { url: undefined, drop: async () => undefined };
  template ??= ensureTemplate();
  const source = await template;
  const name = `${RUN_DATABASE_PREFIX}${randomBytes(6).toString("hex")}`;
  await withAdmin((admin) => admin.query(`CREATE DATABASE ${name} TEMPLATE ${source}`));
  return {
    url: urlOf(name, testPoolerUrl),
    drop: () => withAdmin((admin) => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

/** Drops every database of this run (the globalSetup's teardown). */
export async function dropRunDatabases(): Promise<void> {
  if (!testDatabaseUrl) return;
  await withAdmin(async (admin) => {
    const left = await admin.query<{ datname: string }>("select datname from pg_database where starts_with(datname, $1)", [RUN_DATABASE_PREFIX]);
    for (const { datname } of left.rows) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
  });
}
