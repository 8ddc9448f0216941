import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../server/toolkit/config.ts";

// A typo in a setting must stop the service at once with a message that names it, not misbehave later.
function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe("loadConfig", () => {
  it("has a working default for every setting", () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 3000,
      host: "127.0.0.1",
      publicBaseUrl: undefined,
      databaseUrl: undefined,
      dataDir: resolve(".persona"),
      embeddedDbSocketDir: undefined,
      embeddedDbInMemory: false,
      databasePoolMax: 10,
      logLevel: "info",
      logPretty: false,
      worker: { enabled: true, concurrency: 4, pollIntervalMs: 500 },
      rateLimitPerMinute: 600,
      bodyLimitBytes: 1024 * 1024,
      trustProxy: false,
      shutdownTimeoutMs: 10_000,
      validateResponses: false,
    });
  });

  it("reads values and polls less often on a real PostgreSQL", () => {
    const config = loadConfig({
      PORT: "8080",
      DATABASE_URL: "postgresql://u:p@db:5432/persona",
      WORKER_ENABLED: "no",
      LOG_LEVEL: "debug",
      TRUST_PROXY: "1",
    });
    expect(config).toMatchObject({ port: 8080, databaseUrl: "postgresql://u:p@db:5432/persona", logLevel: "debug", trustProxy: true });
    expect(config.worker).toEqual({ enabled: false, concurrency: 4, pollIntervalMs: 2000, stallMs: 120_000 });
  });

  it.each([
    ["PORT", "abc"],
    ["PORT", "70000"],
    ["LOG_LEVEL", "loud"],
    ["DATABASE_URL", "mysql://x"],
    ["RATE_LIMIT_PER_MINUTE", "0"],
    ["WORKER_ENABLED", "maybe"],
    ["PUBLIC_BASE_URL", "not a url"],
  ])("rejects %s=%s with a ConfigError naming the setting", (name, value) => {
    const error = configError({ [name]: value });
    expect(error.name).toBe("ConfigError");
    expect(error.message).toContain(`${name}=${JSON.stringify(value)}`);
  });

  it("names every bad setting at once", () => {
    const error = configError({ PORT: "abc", LOG_LEVEL: "loud", DATABASE_URL: "mysql://x", RATE_LIMIT_PER_MINUTE: "0" });
    expect(error.message).toMatch(/^Invalid settings:/);
    for (const name of ["PORT", "LOG_LEVEL", "DATABASE_URL", "RATE_LIMIT_PER_MINUTE"]) expect(error.message).toContain(name);
  });

  it("treats an empty string as unset", () => {
    const config = loadConfig({ PORT: "", LOG_LEVEL: "", DATABASE_URL: "", WORKER_ENABLED: "", PUBLIC_BASE_URL: "" });
    expect(config.port).toBe(3000);
    expect(config.logLevel).toBe("info");
    expect(config.databaseUrl).toBeUndefined();
    expect(config.publicBaseUrl).toBeUndefined();
    expect(config.worker.enabled).toBe(true);
  });

  it("lets overrides win over the environment", () => {
    expect(loadConfig({ PORT: "1234" }, { port: 0 }).port).toBe(0);
  });
});
