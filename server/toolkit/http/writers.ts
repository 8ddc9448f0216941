import type { RequestHandler } from "express";
import type { ReadRouting } from "../db/read-routing.ts";
import { callerOf } from "./principal.ts";

/**
 * A request that may write (any method but GET and HEAD) announces its caller before it is handled
 * and when it ends, so that every API process keeps that caller's lag-tolerant reads on the primary
 * until a replica holds what it wrote (server/toolkit/db/read-routing.ts). Only with replicas.
 */
export function announceWriter(reads: ReadRouting): RequestHandler {
  return (req, res, next) => {
    const caller = callerOf(req);
    if (!caller || req.method === "GET" || req.method === "HEAD") return next();
    reads.writing(caller.userId).then((end) => {
      res.once("close", end);
      next();
    }, next);
  };
}
