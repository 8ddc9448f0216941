import type { TaskList } from "graphile-worker";
import { loadConfig, type Config } from "../../server/toolkit/config.ts";
import type { HandlerMap } from "../../server/toolkit/http/router.ts";
import type { Logger } from "../../server/toolkit/logger.ts";
import type { Providers } from "../../server/toolkit/providers/types.ts";
import { startService, type RunningService } from "../../server/runtime.ts";
import { createApiClient, type ApiClient } from "./api.ts";
import { createTestDatabase, databaseSettings, type TestDatabase } from "./database.ts";

export { createTestDatabase, databaseKind, databaseSettings, testDatabaseUrl, type TestDatabase } from "./database.ts";

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
  /**
   * A service of the file's own on an empty database, never a lent one: for tests of what the whole
   * service holds (global orders, counts of every row).
   */
  fresh?: boolean;
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
 *
 * In the service lane (vitest.config.ts) a worker runs its files one after another in one module
 * graph, and a file that asks only for settings (`env`) and a clock (`now`) borrows the worker's
 * service of those settings instead of booting one: its `close()` gives it back and puts the real
 * clock back. A file keeps to itself by its own users, which every file registers anew. Fakes
 * (`providers`, `handlers`, `extraTasks`, `log`, `overrides`), a given `database` or `fresh: true`
 * always get a service of their own, as does every file of the other lanes.
 */
export async function startTestService(options: TestServiceOptions = {}): Promise<TestService> {
  const key = shareKey(options);
  if (key === undefined) return startOwnService(options);
  let entry = shared.get(key);
  if (entry) {
    shared.delete(key); // the Map's order is the order of last use
    shared.set(key, entry);
  } else {
    await retireIdleServices(MAX_LENT_SERVICES - 1);
    const clock: Clock = { now: undefined };
    entry = { clock, borrowed: false, service: startOwnService({ ...options, now: () => (clock.now ? clock.now() : new Date()) }) };
    shared.set(key, entry);
    // A service that failed to start is not lent again.
    entry.service.catch(() => shared.delete(key));
  }
  // A second service of the same settings in one file (a restart, a second process) is its own.
  if (entry.borrowed) return startOwnService(options);
  const { clock } = entry;
  const borrowed = entry;
  borrowed.borrowed = true;
  clock.now = options.now;
  const service = await borrowed.service;
  return {
    ...service,
    // Stopping a lent service would take it from the worker's later files: a test that stops or
    // restarts its service takes one of its own.
    stop: async () => {
      throw new Error("a lent test service is given back with close(), not stopped: pass a fake or `overrides` for a service of your own");
    },
    close: async () => {
      clock.now = undefined;
      borrowed.borrowed = false;
    },
  };
}

interface Clock {
  now: (() => Date) | undefined;
}

/** What every test service runs with unless its test says otherwise. */
const TEST_SETTINGS: Record<string, string> = {
  PORT: "0",
  LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
  VALIDATE_RESPONSES: "true",
  EMBEDDED_DB_IN_MEMORY: "true",
  WORKER_POLL_INTERVAL_MS: "100",
  // Nothing of a test is on its way when it stops its service (the shutdown tests set their own).
  SHUTDOWN_IDLE_GRACE_MS: "50",
  // Every test client is 127.0.0.1, and a lent service serves many files: the request and auth
  // limits have their own tests with low values.
  RATE_LIMIT_PER_MINUTE: "100000",
  AUTH_ATTEMPTS_PER_IP: "100000",
  AUTH_ATTEMPTS_PER_EMAIL: "100000",
  // An automatic avatar is a job for every persona made; the avatar tests turn them on.
  AUTO_AVATARS: "false",
};

/** The worker's services to lend, by their settings, least recently used first. */
const shared = new Map<string, { clock: Clock; borrowed: boolean; service: Promise<TestService> }>();

/**
 * How many services a worker keeps to lend. Each holds database connections (its pools, the job
 * worker, LISTEN): three workers with a service for every settings a file asked for exhausted
 * PostgreSQL's max_connections, so the least recently used idle one is stopped to make room.
 */
const MAX_LENT_SERVICES = 2;

async function retireIdleServices(keep: number): Promise<void> {
  for (const [key, entry] of shared) {
    if (shared.size <= keep) return;
    if (entry.borrowed) continue;
    shared.delete(key);
    await (await entry.service).close().catch(() => undefined);
  }
}

/** The settings that name a service to lend, or undefined when this one must be the caller's own. */
function shareKey(options: TestServiceOptions): string | undefined {
  if (process.env.PERSONA_TEST_LANE !== "service") return undefined;
  const { env, now: _now, ...rest } = options;
  if (Object.values(rest).some((value) => value !== undefined && value !== false)) return undefined;
  return JSON.stringify(Object.entries({ ...TEST_SETTINGS, ...env }).sort(([a], [b]) => a.localeCompare(b)));
}

async function startOwnService(options: TestServiceOptions): Promise<TestService> {
  const database = options.database ?? (await createTestDatabase());
  const config = loadConfig({ ...TEST_SETTINGS, ...(database.url ? databaseSettings(database.url) : {}), ...options.env }, options.overrides);
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
