import { randomBytes } from "node:crypto";
import type { TaskList } from "graphile-worker";
import pg from "pg";
import { loadConfig, type Config } from "../../server/toolkit/config.ts";
import type { HandlerMap } from "../../server/toolkit/http/router.ts";
import type { Logger } from "../../server/toolkit/logger.ts";
import type { Providers } from "../../server/toolkit/providers/types.ts";
import { startService, type RunningService } from "../../server/runtime.ts";
import { createApiClient, type ApiClient } from "./api.ts";

/**
 * Where tests run their database: `TEST_DATABASE_URL` (a PostgreSQL server with pgvector, on
 * which each service gets a fresh database) or, when unset, the embedded PGlite default.
 */
export const testDatabaseUrl = process.env.TEST_DATABASE_URL || undefined;
export const databaseKind = testDatabaseUrl ? "postgres" : "embedded";

export interface TestDatabase {
  /** DATABASE_URL for the service, or undefined for the embedded default. */
  url: string | undefined;
  drop: () => Promise<void>;
}

/** A fresh, empty database of the kind under test. */
export async function createTestDatabase(): Promise<TestDatabase> {
  if (!testDatabaseUrl) return { url: undefined, drop: async () => undefined };
  const name = `persona_test_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: testDatabaseUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(testDatabaseUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: testDatabaseUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

export interface TestServiceOptions {
  env?: Record<string, string>;
  overrides?: Partial<Config>;
  handlers?: HandlerMap;
  extraTasks?: TaskList;
  now?: () => Date;
  log?: Logger;
  /** Reuse this database instead of creating one (several processes on one database). */
  database?: TestDatabase;
  /** Providers instead of the configured ones (fakes, or ones that fail), e.g. `{ llm }`. */
  providers?: Partial<Providers>;
}

export interface TestService extends RunningService {
  database: TestDatabase;
  /** fetch against the service; `path` starts with `/`. */
  fetch: (path: string, init?: RequestInit) => Promise<Response>;
  /** The contract-typed client, without credentials. */
  api: ApiClient;
  /** The contract-typed client acting as `user` (a TestUser: its session; or `{ auth: { "x-api-key": key } }`). */
  clientFor: (user: { auth: Record<string, string> }) => ApiClient;
  close: () => Promise<void>;
}

/**
 * Starts the whole service on a free loopback port, with every JSON response validated against the
 * contract (a mismatch answers 500 and fails the test). Logs are silent unless TEST_LOG_LEVEL is set.
 */
export async function startTestService(options: TestServiceOptions = {}): Promise<TestService> {
  const database = options.database ?? (await createTestDatabase());
  const config = loadConfig(
    {
      PORT: "0",
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
      VALIDATE_RESPONSES: "true",
      EMBEDDED_DB_IN_MEMORY: "true",
      WORKER_POLL_INTERVAL_MS: "100",
      // Nothing of a test is on its way when it stops its service (the shutdown tests set their own).
      SHUTDOWN_IDLE_GRACE_MS: "50",
      // Every test client is 127.0.0.1: the auth limits have their own tests with low values.
      AUTH_ATTEMPTS_PER_IP: "100000",
      AUTH_ATTEMPTS_PER_EMAIL: "100000",
      ...(database.url ? { DATABASE_URL: database.url } : {}),
      ...options.env,
    },
    options.overrides,
  );
  const service = await startService(config, {
    ...(options.handlers ? { handlers: options.handlers } : {}),
    ...(options.extraTasks ? { extraTasks: options.extraTasks } : {}),
    ...(options.now ? { now: options.now } : {}),
    ...(options.log ? { log: options.log } : {}),
    ...(options.providers ? { providers: options.providers } : {}),
  });
  return {
    ...service,
    database,
    fetch: (path, init) => fetch(`${service.url}${path}`, init),
    api: createApiClient(service.url),
    clientFor: (user) => createApiClient(service.url, user.auth),
    close: async () => {
      await service.stop();
      if (!options.database) await database.drop();
    },
  };
}

export const jsonHeaders = { "content-type": "application/json" };
