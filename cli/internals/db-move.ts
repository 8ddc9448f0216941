import { existsSync } from "node:fs";
import { join } from "node:path";
import type { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import { CliError } from "../errors.ts";
import { readForeignKeys, readSequences, readTables, shapeDifferences, userRelations, type Queryable, type Table } from "./db-move-catalog.ts";
import { copyTable } from "./db-move-copy.ts";
import { tableDigest, TEXT_SETTINGS, type Digest } from "./db-move-digest.ts";

// `persona db move --to postgres://…` (ADR 0343): every row of the embedded database into an empty
// PostgreSQL database. The target's schema is made by the service's own migrations and
// graphile-worker's (the schema a server started there would make); the rows then come over in one
// transaction, with the foreign keys dropped and re-added (which checks them) and the tables' own
// triggers off (the rollups and counters they keep are copied as they are), and the sequences set
// where the embedded database's stand. Each table is then compared on both sides by row count and
// hash. The embedded data dir is opened under its lock (no server may run on it meanwhile) and only
// read.

type Progress = (line: string) => void;

export interface MovedTable extends Digest {
  table: string;
}

export interface MoveResult {
  tables: MovedTable[];
  rows: number;
  sequences: number;
  /** Tables the target's migrations made that the embedded database lacks: left as they were made. */
  targetOnly: string[];
}

/** The URL with its password hidden, for messages. */
export const redactUrl = (url: string) => url.replace(/\/\/([^:@/]+):[^@/]+@/, "//$1:***@");

/**
 * Moves the embedded database in `dbDir` (PERSONA_DATA_DIR/db) into the empty database at `to`,
 * verifies it table by table, and answers what was moved. Throws a CliError, with what to do, when
 * a server holds the dir, the target is not empty or lacks pgvector, or the two disagree.
 */
export async function moveEmbeddedDatabase(dbDir: string, to: string, progress: Progress): Promise<MoveResult> {
  if (!existsSync(join(dbDir, "PG_VERSION"))) throw new CliError(`no embedded database in ${dbDir} (PERSONA_DATA_DIR); nothing to move`);
  const { DataDirLock } = await import("../../server/toolkit/db/data-dir-lock.ts");
  const lock = DataDirLock.acquire(dbDir);
  if (!(lock instanceof DataDirLock)) {
    throw new CliError(`the embedded database in ${dbDir} is in use by process ${lock.pid}: stop the server first (what it writes after the copy would not reach PostgreSQL)`);
  }
  try {
    const target = await connectTarget(to);
    try {
      await requireEmptyTarget(target, to);
      progress(`opening ${dbDir}`);
      const { openPglite } = await import("../../server/toolkit/db/pglite-open.ts");
      const source = await openPglite(dbDir);
      try {
        await requireCurrentSchema(source);
        progress(`making the schema on ${redactUrl(to)} (the service's migrations and the job queue's)`);
        await migrateTarget(to);
        return await copyAndVerify(source, target, to, progress);
      } finally {
        await source.close();
      }
    } finally {
      await target.end().catch(() => undefined);
    }
  } finally {
    lock.release();
  }
}

async function connectTarget(to: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: to });
  client.on("error", () => undefined); // a lost connection fails the query in progress
  try {
    await client.connect();
  } catch (error) {
    throw new CliError(`cannot connect to ${redactUrl(to)}: ${(error as Error).message}`);
  }
  return client;
}

async function requireEmptyTarget(target: pg.Client, to: string): Promise<void> {
  const version = Number((await target.query<{ v: string }>("SELECT current_setting('server_version_num') AS v")).rows[0]!.v);
  if (version < 150000) throw new CliError(`${redactUrl(to)} is PostgreSQL ${Math.floor(version / 10000)}: the service needs PostgreSQL 15 or later`);
  const vector = await target.query("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'");
  if (!vector.rowCount) throw new CliError(`${redactUrl(to)} does not have the pgvector extension ("vector"): install pgvector 0.8 for that server first`);
  const present = await userRelations(target);
  if (present.length) {
    throw new CliError(
      `${redactUrl(to)} is not empty (it holds ${present.join(", ")}${present.length === 5 ? ", …" : ""}): ` +
        "`persona db move` copies into an empty database only; create one (CREATE DATABASE persona) and give its URL",
    );
  }
}

/** The embedded database must be at this version's migrations, as the target will be. */
async function requireCurrentSchema(source: PGlite): Promise<void> {
  const { migrationSource } = await import("../../server/toolkit/db/migrations/index.ts");
  const known = (await migrationSource.getMigrations([])).map((name) => migrationSource.getMigrationName(name));
  let applied: string[];
  try {
    applied = (await source.query<{ name: string }>("SELECT name FROM knex_migrations")).rows.map((row) => row.name);
  } catch {
    throw new CliError("the embedded database has no schema yet (the server never started on it): nothing to move");
  }
  const newer = applied.filter((name) => !known.includes(name));
  if (newer.length) throw new CliError(`the embedded database was migrated by a newer version of Persona (${newer.join(", ")}): move it with that version`);
  if (applied.length < known.length) {
    throw new CliError("the embedded database is behind this version's migrations: run `persona migrate` on it first (DATABASE_URL unset), then move it");
  }
}

async function migrateTarget(to: string): Promise<void> {
  const [{ makeSchemaAt }, { stderrLogger }] = await Promise.all([import("../../server/toolkit/jobs/fresh-schema.ts"), import("./database.ts")]);
  await makeSchemaAt(to, await stderrLogger());
}

/** Runs `work` in a transaction of `db` that reads and writes rows as the same text on both sides. */
async function inTransaction<T>(db: Queryable, begin: string, work: () => Promise<T>): Promise<T> {
  await db.query(begin);
  try {
    for (const setting of TEXT_SETTINGS) await db.query(setting);
    const result = await work();
    await db.query("COMMIT");
    return result;
  } catch (error) {
    await db.query("ROLLBACK").catch(() => undefined);
    throw error;
  }
}

const asQueryable = (client: pg.Client): Queryable => ({ query: async <T>(sql: string, params?: unknown[]) => (await client.query(sql, params)) as unknown as { rows: T[] } });

async function copyAndVerify(source: PGlite, client: pg.Client, to: string, progress: Progress): Promise<MoveResult> {
  const target = asQueryable(client);
  const tables = await readTables(source);
  const targetTables = await readTables(target);
  const sourceNames = new Set(tables.map((table) => table.qualified));
  const targetOnly = targetTables.filter((table) => !sourceNames.has(table.qualified));
  const problems = shapeDifferences(tables, targetTables.filter((table) => sourceNames.has(table.qualified)));
  if (problems.length) throw afterSchema(to, `the two schemas differ: ${problems.join("; ")}`);
  const copied = tables.map((table) => table.qualified).join(", ");

  const { moved, sequences, sourceDigests } = await inTransaction(source, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", async () =>
    inTransaction(target, "BEGIN", async () => {
      const foreignKeys = (await readForeignKeys(target)).filter((key) => sourceNames.has(key.table));
      for (const key of foreignKeys) await target.query(`ALTER TABLE ${key.table} DROP CONSTRAINT ${key.name}`);
      for (const table of tables) await target.query(`ALTER TABLE ${table.qualified} DISABLE TRIGGER USER`);
      // The migrations' own rows (seeded settings, job queue bookkeeping) give way to the embedded database's.
      await target.query(`TRUNCATE ${copied}`);
      const moved: { table: Table; rows: number }[] = [];
      for (const [i, table] of tables.entries()) {
        const rows = await copyTable(source, target, table, `move_${i}`);
        if (rows) progress(`copied ${table.qualified}: ${rows} row${rows === 1 ? "" : "s"}`);
        moved.push({ table, rows });
      }
      progress(`checking ${foreignKeys.length} foreign keys`);
      for (const key of foreignKeys) await target.query(`ALTER TABLE ${key.table} ADD CONSTRAINT ${key.name} ${key.definition}`);
      for (const table of tables) await target.query(`ALTER TABLE ${table.qualified} ENABLE TRIGGER USER`);
      const sequences = await readSequences(source);
      for (const sequence of sequences) await target.query("SELECT setval($1::regclass, $2::bigint, $3)", [sequence.qualified, sequence.lastValue, sequence.isCalled]);
      // The source's digests in its own snapshot: what was copied.
      const sourceDigests = new Map<string, Digest>();
      for (const table of tables) sourceDigests.set(table.qualified, await tableDigest(source, table));
      return { moved, sequences, sourceDigests };
    }),
  ).catch((error: unknown) => {
    throw error instanceof CliError ? error : afterSchema(to, `the copy failed and was rolled back: ${(error as Error).message}`);
  });

  progress(`verifying ${tables.length} tables on ${redactUrl(to)}: row counts and hashes`);
  const mismatches: string[] = [];
  const report: MovedTable[] = [];
  await inTransaction(target, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", async () => {
    for (const { table, rows } of moved) {
      const expected = sourceDigests.get(table.qualified)!;
      const found = await tableDigest(target, table);
      if (found.rows !== expected.rows || found.hash !== expected.hash || rows !== expected.rows) {
        mismatches.push(`${table.qualified} (${expected.rows} rows, hash ${expected.hash} in the embedded database; ${found.rows} rows, hash ${found.hash} on the target)`);
      }
      report.push({ table: table.qualified, ...found });
    }
    const targetSequences = new Map((await readSequences(target)).map((s) => [s.qualified, s]));
    for (const sequence of sequences) {
      const found = targetSequences.get(sequence.qualified);
      if (found?.lastValue !== sequence.lastValue || found.isCalled !== sequence.isCalled) mismatches.push(`sequence ${sequence.qualified}`);
    }
  });
  if (mismatches.length) throw afterSchema(to, `the copy does not match the embedded database: ${mismatches.join("; ")}`, "rows");
  return { tables: report, rows: report.reduce((sum, table) => sum + table.rows, 0), sequences: sequences.length, targetOnly: targetOnly.map((table) => table.qualified) };
}

/** A failure once the target has the schema: it is no longer empty, so say how to start again. */
function afterSchema(to: string, problem: string, holds: "schema" | "rows" = "schema"): CliError {
  return new CliError(
    `${problem}. ${redactUrl(to)} now holds the ${holds === "schema" ? "schema without the rows" : "copied rows"}: drop and create that database again before another move (the embedded database is unchanged)`,
  );
}
