import { createServer, type RequestListener, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { publicBaseUrl, type Config } from "../config.ts";
import { StartupError } from "../db/startup-error.ts";
import { answerClientErrorsInEnvelope, MAX_HEADER_BYTES } from "./client-error.ts";

export interface BoundServer {
  server: Server;
  url: string;
  /** Hands the port to the app. */
  serve: (app: RequestListener) => void;
  drain: (timeoutMs: number) => Promise<void>;
}

/**
 * Listens on the configured port before anything else starts. Until `serve` hands it the app, a
 * request is answered 503 `service_unavailable` (starting), as /readyz would say.
 */
export async function bindServer(config: Pick<Config, "host" | "port" | "publicBaseUrl">): Promise<BoundServer> {
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
  // One function for every response ('close' is emitted once): no closure per request.
  const forget = function (this: ServerResponse) {
    open.delete(this);
  };
  server.on("request", (_req, res: ServerResponse) => {
    open.add(res);
    res.on("close", forget);
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
