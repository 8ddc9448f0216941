import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../server/toolkit/config.ts";
import { openDatabase, StartupError } from "../../server/toolkit/db/database.ts";
import { createLogger } from "../../server/toolkit/logger.ts";
import { testPoolerUrl } from "../support/database.ts";
import { createTestDatabase, startTestService, testDatabaseUrl, type TestDatabase, type TestService } from "../support/service.ts";
import { registerUser } from "../support/users.ts";
import { until } from "../support/wait.ts";

// The service behind a pooler in transaction mode (scripts/ci/pooler-tests.sh runs this with
// TEST_DATABASE_POOLER_URL, PgBouncer 1.18 in front of the CI PostgreSQL): what must not go through
// the pooler (LISTEN, the job worker's session advisory locks) is on a direct connection, and a
// listen URL that reaches another database stops the service at start. The cluster tests run in the
// same lane for the behaviour across processes.

const LIVENESS_LOCK_CLASS = 0x70657273; // server/toolkit/jobs/stale-locks.ts

async function query<T extends pg.QueryResultRow>(url: string, sql: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

/** The local ports of the pooler's connections to PostgreSQL (its admin console's SHOW SERVERS). */
async function poolerServerPorts(): Promise<Set<number>> {
  const admin = new URL(testPoolerUrl!);
  admin.pathname = "/pgbouncer";
  // The admin console speaks the simple query protocol only: no parameters.
  const rows = await query<{ local_port: string | number }>(admin.toString(), "SHOW SERVERS");
  return new Set(rows.map((row) => Number(row.local_port)));
}

describe.runIf(testPoolerUrl)("behind a pooler in transaction mode", () => {
  let database: TestDatabase;
  let service: TestService;
  let name: string;

  beforeAll(async () => {
    database = await createTestDatabase();
    name = new URL(database.url!).pathname.slice(1);
    service = await startTestService({ database, env: { WORKER_ENABLED: "true" } });
  }, 120_000);
  afterAll(async () => {
    await service?.close();
    await database?.drop();
  });

  it("runs against a pooler that really is in transaction mode", async () => {
    const admin = new URL(testPoolerUrl!);
    admin.pathname = "/pgbouncer";
    const config = await query<{ key: string; value: string }>(admin.toString(), "SHOW CONFIG");
    expect(config.find((row) => row.key === "pool_mode")?.value).toBe("transaction");
    expect(service.services.config).toMatchObject({ databasePooler: "transaction", databasePreparedStatements: false });
    expect(new URL(service.services.db.url).port).toBe(new URL(testPoolerUrl!).port);
  });

  it("LISTENs and holds the worker's liveness locks on direct connections, not on the pooler's", async () => {
    // A request makes the pooler open server connections for this database.
    const user = await registerUser(service);
    expect((await service.api.GET("/v1/auth/me", { headers: user.auth })).response.status).toBe(200);
    const listeners = await until("the service listens", async () => {
      const rows = await query<{ client_port: number }>(testDatabaseUrl!, "SELECT client_port FROM pg_stat_activity WHERE datname = $1 AND query LIKE 'LISTEN%'", [name]);
      return rows.length ? rows : undefined;
    });
    const holders = await until("the worker holds its liveness lock", async () => {
      const rows = await query<{ client_port: number }>(
        testDatabaseUrl!,
        `SELECT a.client_port FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
          WHERE l.locktype = 'advisory' AND l.classid = $1 AND a.datname = $2 AND l.granted`,
        [LIVENESS_LOCK_CLASS, name],
      );
      return rows.length ? rows : undefined;
    });
    const pooled = await poolerServerPorts();
    expect(pooled.size).toBeGreaterThan(0);
    for (const { client_port } of [...listeners, ...holders]) expect(pooled.has(client_port)).toBe(false);
  });

  it("refuses to start when DATABASE_LISTEN_URL reaches another database than DATABASE_URL", async () => {
    const other = await createTestDatabase();
    try {
      const elsewhere = new URL(testDatabaseUrl!);
      elsewhere.pathname = new URL(other.url!).pathname;
      const config = loadConfig({ DATABASE_URL: database.url!, DATABASE_POOLER: "transaction", DATABASE_LISTEN_URL: elsewhere.toString(), LOG_LEVEL: "silent" });
      const opened = openDatabase(config, createLogger(config));
      await expect(opened).rejects.toBeInstanceOf(StartupError);
      await expect(opened).rejects.toThrow(/DATABASE_LISTEN_URL .*did not arrive/);
    } finally {
      await other.drop();
    }
  });
});
