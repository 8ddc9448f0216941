import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../server/toolkit/config.ts";

// The settings of a deployment behind a pooler in transaction mode (docs/operations.md, "Running on
// several machines"): a pooler without a direct connection for LISTEN stops the service at once,
// and prepared statements follow the pooler unless set.
const pooled = "postgres://app@pgbouncer:6432/persona";
const direct = "postgres://app@db:5432/persona";

describe("pooler settings", () => {
  it("default to no pooler: prepared statements on, LISTEN on DATABASE_URL", () => {
    expect(loadConfig({ DATABASE_URL: direct })).toMatchObject({ databasePooler: "none", databasePreparedStatements: true, databaseListenUrl: undefined });
  });

  it("turn prepared statements off behind a transaction pooler, unless set (PgBouncer 1.21+)", () => {
    const behind = { DATABASE_URL: pooled, DATABASE_POOLER: "transaction", DATABASE_LISTEN_URL: direct };
    expect(loadConfig(behind)).toMatchObject({ databasePooler: "transaction", databasePreparedStatements: false, databaseListenUrl: direct });
    expect(loadConfig({ ...behind, DATABASE_PREPARED_STATEMENTS: "true" }).databasePreparedStatements).toBe(true);
    expect(loadConfig({ DATABASE_URL: direct, DATABASE_PREPARED_STATEMENTS: "false" }).databasePreparedStatements).toBe(false);
  });

  it("refuse a transaction pooler without a direct listen URL, and a listen URL without a database URL", () => {
    expect(() => loadConfig({ DATABASE_URL: pooled, DATABASE_POOLER: "transaction" })).toThrow(ConfigError);
    expect(() => loadConfig({ DATABASE_URL: pooled, DATABASE_POOLER: "transaction" })).toThrow(/DATABASE_LISTEN_URL/);
    expect(() => loadConfig({ DATABASE_LISTEN_URL: direct })).toThrow(/DATABASE_URL/);
    expect(() => loadConfig({ DATABASE_POOLER: "transaction", DATABASE_LISTEN_URL: direct })).toThrow(ConfigError);
    expect(() => loadConfig({ DATABASE_URL: pooled, DATABASE_POOLER: "session" })).toThrow(/DATABASE_POOLER/);
  });
});
