import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../server/toolkit/config.ts";
import { StartupError } from "../../server/toolkit/db/database.ts";
import { startEmbeddedPostgres } from "../../server/toolkit/db/embedded.ts";
import { startService } from "../../server/runtime.ts";
import { freePort } from "../support/ports.ts";
import { databaseKind, startTestService, type TestService } from "../support/service.ts";

// The database holds every user's data: it must persist, refuse unusable servers clearly, and report readiness.
async function startupError(env: Record<string, string>): Promise<StartupError> {
  const config = loadConfig({ PORT: "0", LOG_LEVEL: "silent", ...env });
  const error = await startService(config).then(
    async (service) => {
      await service.stop();
      throw new Error("startService succeeded");
    },
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(StartupError);
  return error as StartupError;
}

describe("the embedded database", () => {
  it("keeps its data across a restart on the same data directory", { timeout: 60_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "persona-db-"));
    try {
      const config = loadConfig({ PORT: "0", LOG_LEVEL: "silent", PERSONA_DATA_DIR: dataDir, WORKER_ENABLED: "false" });
      expect(config.embeddedDbInMemory).toBe(false);
      const first = await startService(config);
      expect(first.services.db.kind).toBe("embedded");
      await first.services.db.knex.schema.createTable("restart_probe", (table) => {
        table.increments("id");
        table.text("note").notNullable();
      });
      await first.services.db.knex("restart_probe").insert({ note: "still here" });
      await first.stop();

      const second = await startService(config);
      try {
        expect(await second.services.db.knex("restart_probe").select("note")).toEqual([{ note: "still here" }]);
      } finally {
        await second.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  // libpq's variables name the operator's own server (CI exports PGPORT for its PostgreSQL): the
  // embedded database's URL must say everything itself, or pg looks for .s.PGSQL.<PGPORT>.
  it("is reached whatever PGPORT and PGSSLMODE the environment holds", { timeout: 60_000 }, async () => {
    const saved = { PGPORT: process.env.PGPORT, PGSSLMODE: process.env.PGSSLMODE };
    Object.assign(process.env, { PGPORT: "1", PGSSLMODE: "require" });
    try {
      const embedded = await startEmbeddedPostgres(undefined);
      try {
        const pool = new pg.Pool({ connectionString: embedded.url });
        try {
          expect((await pool.query("select 1 as one")).rows).toEqual([{ one: 1 }]);
        } finally {
          await pool.end();
        }
      } finally {
        await embedded.stop();
      }
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });
});

describe("start-up against an unusable DATABASE_URL", () => {
  it("stops with a clear message when the server lacks pgvector", async () => {
    const plain = await startEmbeddedPostgres(undefined, { pgvector: false });
    try {
      const error = await startupError({ DATABASE_URL: plain.url });
      expect(error.message).toMatch(/pgvector/);
      expect(error.message).toContain('"vector"');
      expect(error.message).toContain(plain.url);
    } finally {
      await plain.stop();
    }
  });

  it("names the unreachable database without its password", async () => {
    const port = await freePort();
    const error = await startupError({ DATABASE_URL: `postgres://persona:s3cret-pw@127.0.0.1:${port}/persona` });
    expect(error.message).toContain(`Cannot connect to the database at postgres://persona:***@127.0.0.1:${port}/persona`);
    expect(error.message).not.toContain("s3cret-pw");
  });
});

describe(`the ${databaseKind} database under test`, () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService();
  });

  afterAll(async () => {
    await service?.close();
  });

  it("is the kind TEST_DATABASE_URL asks for", () => {
    expect(service.services.db.kind).toBe(databaseKind);
  });

  it("has pgvector and the migrations applied", async () => {
    const { knex } = service.services.db;
    const vector = await knex.raw<{ rows: { extname: string }[] }>("select extname from pg_extension where extname = 'vector'");
    expect(vector.rows).toHaveLength(1);
    const [, pending] = (await knex.migrate.list()) as [unknown[], unknown[]];
    expect(pending).toEqual([]);
  });

  it("migrates idempotently", async () => {
    const before = await service.services.db.knex("knex_migrations").count({ n: "*" });
    await service.services.db.migrate();
    await service.services.db.migrate();
    expect(await service.services.db.knex("knex_migrations").count({ n: "*" })).toEqual(before);
  });

  it("answers /readyz with the database and worker ok", async () => {
    const response = await service.fetch("/readyz");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ready", checks: { database: "ok", worker: "ok" } });
  });

  it("reports the worker as disabled when this process runs none", async () => {
    const apiOnly = await startTestService({ env: { WORKER_ENABLED: "false" } });
    try {
      const response = await apiOnly.fetch("/readyz");
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ status: "ready", checks: { database: "ok", worker: "disabled" } });
    } finally {
      await apiOnly.close();
    }
  });
});
