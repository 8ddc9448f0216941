import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../server/toolkit/config.ts";
import { currentTemplate } from "../../server/toolkit/db/embedded-template.ts";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "../../server/toolkit/db/embedded.ts";
import { startService } from "../../server/runtime.ts";
import { databaseKind } from "../support/service.ts";

// The template `npm install` makes (server/toolkit/db/embedded-template.ts, scripts/embedded-template.ts):
// a new embedded database starts from it with exactly the schema and rows that initdb and the
// migrations give one created from scratch, and with nothing of an installation in it. Without a
// template (an install with --ignore-scripts) there is nothing to compare.

const CATALOG = {
  columns: `SELECT table_schema, table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns
             WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2, 3`,
  indexes: `SELECT schemaname, tablename, indexname, indexdef FROM pg_indexes WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2, 3`,
  constraints: `SELECT conrelid::regclass::text AS relation, conname, pg_get_constraintdef(oid) AS definition FROM pg_constraint
                 WHERE connamespace::regnamespace::text NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2, 3`,
  triggers: "SELECT tgrelid::regclass::text AS relation, tgname FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1, 2",
  functions: `SELECT pronamespace::regnamespace::text AS schema, proname, pg_get_function_identity_arguments(oid) AS args FROM pg_proc
               WHERE pronamespace::regnamespace::text NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2, 3`,
  extensions: "SELECT extname, extversion FROM pg_extension ORDER BY 1",
  migrations: "SELECT name FROM knex_migrations ORDER BY name",
  workerMigrations: "SELECT id FROM graphile_worker.migrations ORDER BY id",
} as const;

/** The schema of the database at `url`, and the row count of every table in `public`. */
async function describeDatabase(url: string): Promise<{ catalog: Record<string, unknown[]>; rows: Record<string, number> }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const catalog: Record<string, unknown[]> = {};
    for (const [name, sql] of Object.entries(CATALOG)) catalog[name] = (await client.query(sql)).rows;
    const rows: Record<string, number> = {};
    for (const { tablename } of (await client.query<{ tablename: string }>("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")).rows) {
      rows[tablename] = (await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM public."${tablename}"`)).rows[0]!.n;
    }
    return { catalog, rows };
  } finally {
    await client.end();
  }
}

async function withEmbedded<T>(start: () => Promise<EmbeddedPostgres>, use: (embedded: EmbeddedPostgres) => Promise<T>): Promise<T> {
  const embedded = await start();
  try {
    return await use(embedded);
  } finally {
    await embedded.stop();
  }
}

describe.skipIf(databaseKind !== "embedded" || !currentTemplate())("the embedded template", () => {
  it("gives a new database the schema and rows initdb and the migrations give, and no instance secret", { timeout: 180_000 }, async () => {
    const fromTemplate = await withEmbedded(
      () => startEmbeddedPostgres(undefined),
      async (embedded) => {
        expect(embedded.timings).toMatchObject({ fromTemplate: true, initdb: false });
        return describeDatabase(embedded.url);
      },
    );
    expect(fromTemplate.rows.instance_secrets).toBe(0);

    const fromScratch = await withEmbedded(
      () => startEmbeddedPostgres(undefined, { template: false }),
      async (embedded) => {
        expect(embedded.timings).toMatchObject({ fromTemplate: false, initdb: true });
        // The service's own start: migrations, the job queue's schema, the instance secrets.
        const service = await startService(loadConfig({ PORT: "0", LOG_LEVEL: "silent", DATABASE_URL: embedded.url, WORKER_ENABLED: "false" }), { http: false });
        await service.stop();
        return describeDatabase(embedded.url);
      },
    );
    expect(fromTemplate.catalog.columns!.length).toBeGreaterThan(100);
    expect(fromTemplate.catalog).toEqual(fromScratch.catalog);
    expect(fromScratch.rows.instance_secrets).toBeGreaterThan(0);
    expect({ ...fromTemplate.rows, instance_secrets: 0 }).toEqual({ ...fromScratch.rows, instance_secrets: 0 });
  });

  it("is copied into a new data dir, which then starts as any other", { timeout: 180_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "persona-template-"));
    try {
      const first = await withEmbedded(
        () => startEmbeddedPostgres(join(dataDir, "db")),
        async (embedded) => {
          const client = new pg.Client({ connectionString: embedded.url });
          await client.connect();
          await client.query("INSERT INTO instance_secrets (name, value) VALUES ('probe', 'kept')");
          await client.end();
          return embedded.timings;
        },
      );
      expect(first).toMatchObject({ fromTemplate: true, initdb: false });
      const again = await withEmbedded(
        () => startEmbeddedPostgres(join(dataDir, "db")),
        async (embedded) => {
          const client = new pg.Client({ connectionString: embedded.url });
          await client.connect();
          const { rows } = await client.query("SELECT value FROM instance_secrets WHERE name = 'probe'");
          await client.end();
          expect(rows).toEqual([{ value: "kept" }]);
          return embedded.timings;
        },
      );
      expect(again).toMatchObject({ fromTemplate: false, initdb: false });
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
