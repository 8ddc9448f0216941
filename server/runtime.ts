import { createServer, type RequestListener, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { TaskList } from "graphile-worker";
import { createApp } from "./app.ts";
import { instanceSecret } from "./auth/secrets.ts";
import { TokenSigner } from "./auth/tokens.ts";
import { publicBaseUrl, type Config } from "./config.ts";
import { openDatabase, StartupError, type Database } from "./db/database.ts";
import { answerClientErrorsInEnvelope, MAX_HEADER_BYTES } from "./http/client-error.ts";
import type { HandlerMap } from "./http/router.ts";
import { openJobQueue } from "./jobs/queue.ts";
import { startWorker, type RunningWorker } from "./jobs/worker.ts";
import { createLogger, type Logger } from "./logger.ts";
import { createProviders, type Providers } from "./providers/index.ts";
import { warmUpTokenizer } from "./providers/llm/tokens.ts";
import type { Services } from "./services.ts";
import { crontab, taskList } from "./tasks.ts";

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
}

/**
 * Starts the parts of the service this process runs: database (and migrations), job queue,
 * optionally the worker, optionally the HTTP server. `stop` drains in-flight requests, stops the
 * worker and closes the database, in that order.
 */
export async function startService(config: Config, options: StartOptions = {}): Promise<RunningService> {
  const started = Date.now();
  const log = options.log ?? createLogger(config);
  // The port first: one in use is reported at once, not after the database has been opened.
  const bound = options.http !== false ? await bindServer(config) : undefined;
  const server = bound?.server;
  let db: Database;
  try {
    db = await openDatabase(config, log);
  } catch (error) {
    server?.close();
    throw error;
  }
  let worker: RunningWorker | undefined;
  try {
    await db.migrate();
    const jobs = await openJobQueue(db, log);
    const tokens = new TokenSigner(await instanceSecret(db.knex, "jwt", config.jwtSecret));
    const shuttingDown = new AbortController();
    const services: Services = {
      config,
      db,
      log,
      jobs,
      tokens,
      providers: createProviders(config, db.knex, log, options.providers),
      now: options.now ?? (() => new Date()),
      health: { worker: config.worker.enabled ? "ok" : "disabled" },
      stopping: shuttingDown.signal,
    };
    if (config.worker.enabled) worker = await startWorker(services, { ...taskList(services), ...options.extraTasks }, crontab);
    // Loading the tokenizer's rank file takes a moment; the first chat request should not pay it.
    if (options.http !== false) warmUpTokenizer();
    let url = "";
    let drain: ((timeoutMs: number) => Promise<void>) | undefined;
    if (bound) {
      bound.serve(createApp(services, options.handlers));
      drain = bound.drain;
      url = bound.url;
      log.info({ url, database: db.kind, worker: Boolean(worker), ms: Date.now() - started }, "persona is listening");
    } else {
      log.info({ database: db.kind, ms: Date.now() - started }, "persona worker is running");
    }
    let stopping: Promise<void> | undefined;
    const stop = () =>
      (stopping ??= (async () => {
        log.info("shutting down: draining requests");
        shuttingDown.abort();
        await drain?.(config.shutdownTimeoutMs);
        await worker?.stop();
        await jobs.release();
        await db.close();
        log.info("shut down");
      })());
    return { url, services, server, stop };
  } catch (error) {
    server?.close();
    await worker?.stop().catch(() => undefined);
    await db.close();
    throw error;
  }
}

/**
 * Listens on the configured port before anything else starts. Until `serve` hands it the app, a
 * request is answered 503 `service_unavailable` (starting), as /readyz would say.
 */
async function bindServer(config: Config): Promise<{ server: Server; url: string; serve: (app: RequestListener) => void; drain: (timeoutMs: number) => Promise<void> }> {
  const starting: RequestListener = (_req, res) => {
    res.writeHead(503, { "content-type": "application/json; charset=utf-8", "retry-after": "1" });
    res.end(JSON.stringify({ error: { code: "service_unavailable", message: "The service is starting" } }));
  };
  const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES }, starting);
  answerClientErrorsInEnvelope(server);
  const drain = drainable(server);
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) =>
      reject(
        error.code === "EADDRINUSE" || error.code === "EACCES" || error.code === "EADDRNOTAVAIL"
          ? new StartupError(`Cannot listen on ${config.host}:${config.port} (${error.code}); set PORT or HOST`)
          : error,
      ),
    );
    server.listen(config.port, config.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = publicBaseUrl({ ...config, port, publicBaseUrl: undefined });
  // Links in mails must name the port actually bound (PORT=0 picks one).
  config.publicBaseUrl ??= url;
  const serve = (app: RequestListener) => {
    server.off("request", starting);
    server.on("request", app);
  };
  return { server, url, serve, drain };
}

/**
 * Returns `drain`: stop accepting connections and wait for in-flight requests, up to `timeoutMs`.
 * A keep-alive connection that is busy when draining starts would otherwise stay open, idle, after
 * its response until the client or keepAliveTimeout closes it; so responses sent while draining
 * say `Connection: close`, and each connection is closed as soon as its last response is sent.
 */
function drainable(server: Server): (timeoutMs: number) => Promise<void> {
  const open = new Set<ServerResponse>();
  let draining = false;
  const closeIdleSoon = () => setImmediate(() => server.closeIdleConnections());
  const leaving = (res: ServerResponse) => {
    if (!res.headersSent) res.setHeader("connection", "close");
    res.once("finish", closeIdleSoon);
  };
  server.on("request", (_req, res: ServerResponse) => {
    open.add(res);
    res.once("close", () => open.delete(res));
    if (draining) leaving(res);
  });
  return async (timeoutMs) => {
    draining = true;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const res of open) leaving(res);
    server.closeIdleConnections();
    const timer = setTimeout(() => server.closeAllConnections(), timeoutMs);
    await closed;
    clearTimeout(timer);
  };
}
