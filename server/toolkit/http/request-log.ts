import { randomUUID } from "node:crypto";
import type { Express, Request, RequestHandler, Response } from "express";
import type { Level } from "pino";
import { httpSerializers, type Logger } from "../logger.ts";

declare module "http" {
  interface IncomingMessage {
    /** The request id: the client's `X-Request-Id` when safe, else a new UUID. */
    id: string;
    /** A logger whose lines carry this request's id as `reqId` (made on first use). */
    log: Logger;
  }
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;
const START = Symbol("request start");
const CHILD = Symbol("request logger");
type Timed = Request & { [START]?: number; [CHILD]?: Logger };

/**
 * The request id and one line per request, in place of pino-http, which built a child logger and a
 * log object on every request whatever the level (a measurable share of a small request's CPU).
 * A success is logged at debug and a refusal (4xx, 501-503) at info/warn, each as one line without a
 * stack; a failure of the service (500) at error, its stack logged once by the error middleware.
 * Nothing is built for a line whose level is off. `req.log` is made only when something logs.
 */
export function requestLog(app: Express, log: Logger): RequestHandler {
  Object.defineProperty(app.request, "log", {
    configurable: true,
    get(this: Timed) {
      return (this[CHILD] ??= log.child({ reqId: this.id }));
    },
  });
  const completed = function (this: Response) {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- 'close' gives the response as `this`
    const res = this;
    const req = res.req as Timed;
    const status = res.statusCode;
    const level: Level = status === 500 ? "error" : status >= 500 ? "warn" : status >= 400 ? "info" : "debug";
    if (!log.isLevelEnabled(level)) return;
    // Serialized here, not by the logger's serializers: a logger made elsewhere (a caller's own
    // pino) must not get the raw request, whose headers and body hold credentials.
    const line = { req: httpSerializers.req(req), res: httpSerializers.res(res), responseTime: Date.now() - req[START]! };
    req.log[level](line, status === 500 ? "request failed" : res.writableFinished ? "request completed" : "request aborted");
  };
  // With debug off a success logs nothing, but the status is known only at the end.
  const listens = log.isLevelEnabled("error");
  return (req: Timed, res, next) => {
    const given = req.headers["x-request-id"];
    req.id = typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
    res.setHeader("X-Request-Id", req.id);
    if (listens) {
      req[START] = Date.now();
      // One function for every request ('close' is emitted once): no closure per request.
      res.on("close", completed);
    }
    next();
  };
}
