import type { Server } from "node:http";
import type { TaskList } from "graphile-worker";
import { createApp, errorDialects } from "./app.ts";
import { instanceSecret } from "./toolkit/db/instance-secrets.ts";
import { Generations, settleGenerations } from "./areas/conversations/index.ts";
import { createRoomHub } from "./areas/rooms/index.ts";
import { createShareTargets, ShareOpenCounter } from "./areas/social/index.ts";
import { VoiceLimiters } from "./areas/voice/index.ts";
import type { LiveLogDeps } from "./toolkit/events/live-log.ts";
import { TokenSigner } from "./toolkit/tokens.ts";
import type { Config } from "./toolkit/config.ts";
import { openDatabase, type Database } from "./toolkit/db/database.ts";
import type { EmbeddedDatabase } from "./toolkit/db/embedded.ts";
import { bindServer, type BoundServer } from "./toolkit/http/listener.ts";
import { StreamPlaces } from "./toolkit/http/stream-limits.ts";
import type { HandlerMap } from "./toolkit/http/router.ts";
import { openJobQueue } from "./toolkit/jobs/queue.ts";
import { startWorker, type RunningWorker } from "./toolkit/jobs/worker.ts";
import { createLogger, type Logger } from "./toolkit/logger.ts";
import { flushTraces } from "./toolkit/tracing/active.ts";
import { watchService, type WatchedService } from "./toolkit/metrics/service.ts";
import { createProviders, type Providers } from "./toolkit/providers/index.ts";
import type { Services } from "./toolkit/services.ts";
import { crontab, startConnections, taskList } from "./areas.ts";

export interface RunningService {
  url: string;
  services: Services;
  server: Server | undefined;
  stop: () => Promise<void>;
}

export interface StartOptions {
  /** Serve HTTP (false: a worker-only process). */
  http?: boolean;
  handlers?: HandlerMap;
  extraTasks?: TaskList;
  now?: () => Date;
  log?: Logger;
  /** Providers to use instead of the configured ones (tests: fakes, or ones that fail). */
  providers?: Partial<Providers>;
  /** The port, already bound (`npm start` binds it before loading the service). */
  bound?: BoundServer | undefined;
  /** The embedded database, already starting (`npm start` starts it before loading the service). */
  embedded?: Promise<EmbeddedDatabase> | undefined;
  /** The embedded database another process serves (the primary of `serve --processes N`). */
  sharedEmbeddedUrl?: string | undefined;
  /**
   * Listen only once the app is ready (the processes of `serve --processes N`: while one starts,
   * the others serve, so it should not take connections only to answer 503).
   */
  listenWhenReady?: boolean;
}

/**
 * Starts the parts of the service this process runs: database (and migrations), job queue,
 * optionally the worker, optionally the HTTP server. `stop` drains in-flight requests, stops the
 * worker and closes the database, in that order.
 */
export async function startService(config: Config, options: StartOptions = {}): Promise<RunningService> {
  const started = Date.now();
  const phase = startupPhases();
  const log = options.log ?? createLogger(config);
  // The port first: one in use is reported at once, not after the database has been opened.
  let bound: BoundServer | undefined;
  try {
    bound = options.bound ?? (options.http !== false && !options.listenWhenReady ? await bindServer(config) : undefined);
  } catch (error) {
    await options.embedded?.then((embedded) => embedded.stop()).catch(() => undefined);
    throw error;
  }
  // Refusals given before the app serves (a malformed request, 503 while starting) in the shape of their path.
  bound?.answerErrorsAs(errorDialects);
  const server = bound?.server;
  phase("bind");
  let db: Database;
  try {
    db = await openDatabase(config, log, { ...(options.embedded ? { embedded: options.embedded } : {}), ...(options.sharedEmbeddedUrl ? { sharedEmbeddedUrl: options.sharedEmbeddedUrl } : {}) });
  } catch (error) {
    server?.close();
    throw error;
  }
  phase("database");
  let worker: RunningWorker | undefined;
  let connections: { stop: () => Promise<void> } | undefined;
  let watched: WatchedService | undefined;
  try {
    await db.migrate();
    phase("migrate");
    const jobs = await openJobQueue(db, log);
    phase("jobQueue");
    const tokens = new TokenSigner(await instanceSecret(db.knex, "jwt", config.jwtSecret));
    phase("secrets");
    const shuttingDown = new AbortController();
    const services: Services = {
      config,
      db,
      log,
      jobs,
      tokens,
      providers: await createProviders(config, db.knex, log, options.providers),
      now: options.now ?? (() => new Date()),
      health: { worker: config.worker.enabled ? "ok" : "disabled" },
      stopping: shuttingDown.signal,
      ...processRegistries({ db, log, stopping: shuttingDown.signal }),
    };
    // Metrics (when configured) before the worker and the app, which its hooks measure.
    watched = await watchService(services);
    if (config.worker.enabled) worker = await startWorker(services, { ...taskList(services), ...options.extraTasks }, crontab);
    if (config.worker.enabled) connections = startConnections(services);
    phase("worker");
    let url = "";
    let drain: ((timeoutMs: number) => Promise<void>) | undefined;
    if (options.http !== false && options.listenWhenReady) {
      const app = await createApp(services, options.handlers);
      bound = await bindServer(config);
      bound.answerErrorsAs(errorDialects);
      bound.serve(app);
    } else if (bound) {
      bound.serve(await createApp(services, options.handlers));
    }
    if (bound) {
      phase("app");
      drain = bound.drain;
      url = bound.url;
      log.info({ url, database: db.kind, worker: Boolean(worker), ms: Date.now() - started, startup: phase.all }, "persona is listening");
    } else {
      log.info({ database: db.kind, ms: Date.now() - started, startup: phase.all }, "persona worker is running");
    }
    let stopping: Promise<void> | undefined;
    const stop = () =>
      (stopping ??= (async () => {
        log.info("shutting down: draining requests");
        shuttingDown.abort();
        await drain?.(config.shutdownTimeoutMs);
        await watched?.stop();
        // Streamed replies outlive their requests (issue 21): they end and are stored before the database closes.
        await settleGenerations(services);
        await connections?.stop();
        await worker?.stop();
        await jobs.release();
        await db.close();
        // The spans still batched leave before the process does (nothing while traces are off).
        await flushTraces();
        log.info("shut down");
      })());
    return { url, services, server: bound?.server, stop };
  } catch (error) {
    bound?.server.close();
    await watched?.stop().catch(() => undefined);
    await connections?.stop().catch(() => undefined);
    await worker?.stop().catch(() => undefined);
    await db.close();
    throw error;
  }
}

/**
 * The process-scoped registries carried on `Services`: one of each per process (per started service:
 * tests run several in one process), created here rather than on first use, so that `Services`
 * shows them all. Lazy inside: a log listens on its channel, a limiter opens, on first use.
 */
export function processRegistries(deps: LiveLogDeps & { db: Database }): Pick<Services, "streamPlaces" | "areas"> {
  return {
    streamPlaces: new StreamPlaces(),
    areas: {
      generations: new Generations(deps),
      roomHub: createRoomHub(deps),
      shareOpens: new ShareOpenCounter(deps),
      shareTargets: createShareTargets(),
      voiceLimiters: new VoiceLimiters(deps.db),
    },
  };
}

/**
 * Where start-up time goes, in milliseconds per phase: `modules` is the process's own start and its
 * imports (everything before startService), then one entry per step. bench/startup.ts reads it
 * from the "persona is listening" line.
 */
function startupPhases(): ((name: string) => void) & { all: Record<string, number> } {
  let last = performance.now();
  const all: Record<string, number> = { modules: Math.round(last) };
  const phase = (name: string) => {
    const now = performance.now();
    all[name] = Math.round(now - last);
    last = now;
  };
  return Object.assign(phase, { all });
}
