import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from "node:http";
import { Server as NetServer, type AddressInfo, type Socket } from "node:net";
import { publicBaseUrl, type Config } from "../config.ts";
import { StartupError } from "../db/startup-error.ts";
import { answerClientErrors, MAX_HEADER_BYTES } from "./client-error.ts";
import { serviceUnavailable } from "./error-catalogue.ts";
import { errorAnswer, type ErrorDialect } from "./error-dialects.ts";

export interface BoundServer {
  server: Server;
  url: string;
  /** Hands the port to the app. */
  serve: (app: RequestListener) => void;
  /**
   * The error shapes of path prefixes (the app's), for the answers given before the app sees a
   * request: a malformed request, and 503 while starting. Until set, every one is in the envelope.
   */
  answerErrorsAs: (dialects: readonly ErrorDialect[]) => void;
  drain: (timeoutMs: number) => Promise<void>;
}

/**
 * Listens on the configured port before anything else starts. Until `serve` hands it the app, a
 * request is answered 503 `service_unavailable` (starting), as /readyz would say.
 */
export async function bindServer(config: Pick<Config, "host" | "port" | "publicBaseUrl" | "shutdownIdleGraceMs">): Promise<BoundServer> {
  let dialects: readonly ErrorDialect[] = [];
  const starting: RequestListener = (req, res) => {
    const answer = errorAnswer(serviceUnavailable("The service is starting", 1), req.url, dialects);
    res.writeHead(answer.status, { ...answer.headers, "content-type": "application/json; charset=utf-8" });
    res.end(JSON.stringify(answer.body));
  };
  const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES }, starting);
  answerClientErrors(server, () => dialects);
  const drain = drainable(server, config.shutdownIdleGraceMs);
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
  const answerErrorsAs = (given: readonly ErrorDialect[]) => {
    dialects = given;
  };
  return { server, url, serve, answerErrorsAs, drain };
}

/**
 * Returns `drain`: stop accepting connections and wait for in-flight requests, up to `timeoutMs`.
 * Responses sent while draining say `Connection: close`, and each connection closes after its last
 * response. A connection idle when draining starts is not cut at once (issue 31 L7): a request the
 * client has just sent on it would be reset unanswered (Node's own `server.close()` closes idle
 * connections at once, so only the listening socket is closed here). It is closed after a grace
 * (`idleGraceMs`) in which a request that arrives is served like any other, and after the poll phase of the
 * event loop has read what the client sent (the check runs in `setImmediate` after the timer).
 */
function drainable(server: Server, idleGraceMs: number): (timeoutMs: number) => Promise<void> {
  const open = new Set<ServerResponse>();
  // Answers not yet done per connection: pipelined requests have several at once.
  const busy = new Map<Socket, number>();
  const sockets = new Set<Socket>();
  let draining = false;
  const leaving = (res: ServerResponse) => {
    if (!res.headersSent) res.setHeader("connection", "close");
  };
  // One function for every response and socket ('close' is emitted once): no closure per request.
  const forget = function (this: ServerResponse) {
    open.delete(this);
    // At 'close' the response has let go of its socket already; its request has not.
    const socket = this.req.socket as Socket | null;
    if (!socket) return;
    const left = (busy.get(socket) ?? 1) - 1;
    if (left > 0) return void busy.set(socket, left);
    busy.delete(socket);
    // A response whose headers went out before draining began may leave its connection open.
    if (draining) closeSoonIfIdle(socket);
  };
  const gone = function (this: Socket) {
    sockets.delete(this);
    busy.delete(this);
  };
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", gone);
  });
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    open.add(res);
    busy.set(req.socket as Socket, (busy.get(req.socket as Socket) ?? 0) + 1);
    res.on("close", forget);
    if (draining) leaving(res);
  });
  const closeIfIdle = (socket: Socket, readBefore: number) => {
    if (busy.has(socket) || socket.destroyed || socket.bytesRead !== readBefore) return;
    socket.end();
    socket.once("finish", () => socket.destroy());
  };
  let graceMs = idleGraceMs;
  const closeSoonIfIdle = (socket: Socket) => {
    const readBefore = socket.bytesRead;
    setTimeout(() => setImmediate(closeIfIdle, socket, readBefore), graceMs).unref();
  };
  return async (timeoutMs) => {
    draining = true;
    graceMs = Math.min(idleGraceMs, timeoutMs);
    const closed = new Promise<void>((resolve) => NetServer.prototype.close.call(server, () => resolve()));
    for (const res of open) leaving(res);
    for (const socket of sockets) if (!busy.has(socket)) closeSoonIfIdle(socket);
    const timer = setTimeout(() => server.closeAllConnections(), timeoutMs);
    await closed;
    clearTimeout(timer);
  };
}
