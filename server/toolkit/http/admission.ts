import type { NextFunction, RequestHandler, Response } from "express";
import { refused } from "../metrics/http.ts";
import { EXEMPT, overloaded } from "./load-shedding.ts";

export interface AdmissionLimits {
  /** Requests worked on at once; 0 turns admission control off. */
  maxInFlight: number;
  /** Requests that may wait for a place; more are refused at once. */
  maxQueue: number;
  /** How long a request may wait for a place before it is refused. */
  queueMs: number;
}

interface Waiter {
  admit: () => void;
  timer: NodeJS.Timeout;
}

const HELD = Symbol("admission place");
type Holding = Response & { [HELD]?: (() => void) | undefined };

/** Gives the response's place back, once ('finish' and 'close' both call it; so may a stream). */
function leave(this: Holding): void {
  const release = this[HELD];
  if (!release) return;
  this[HELD] = undefined;
  release();
}

/** `res` holds a place until it leaves. One listener function for every response: no closure per request. */
function hold(res: Holding, release: () => void): void {
  res[HELD] = release;
  res.on("finish", leave);
  res.on("close", leave);
}

/**
 * Bounds the work in progress instead of letting every request wait: at most `maxInFlight` requests
 * are worked on at once, up to `maxQueue` more wait in arrival order for at most `queueMs`, and the
 * rest get 429 with Retry-After before any work. The waiting that matters is behind the database
 * (the pool, or the embedded database's single session), which the event loop's delay does not
 * show: an unbounded number of admitted requests share the same connections, so each waits longer
 * and, past capacity, every request times out instead of the excess being refused.
 */
export function admission(limits: AdmissionLimits): RequestHandler {
  if (limits.maxInFlight <= 0) return (_req, _res, next) => next();
  let inFlight = 0;
  const queue: Waiter[] = [];
  const release = () => {
    inFlight--;
    queue.shift()?.admit();
  };
  const enter = (res: Response, next: NextFunction) => {
    inFlight++;
    hold(res, release);
    next();
  };
  return (req, res, next) => {
    if (EXEMPT.has(req.path)) return next();
    if (inFlight < limits.maxInFlight) return enter(res, next);
    if (queue.length >= limits.maxQueue || limits.queueMs <= 0) {
      refused("admission_full");
      return next(overloaded());
    }
    const waiter: Waiter = {
      admit: () => {
        clearTimeout(waiter.timer);
        res.off("close", gone);
        enter(res, next);
      },
      timer: setTimeout(() => {
        leaveQueue();
        refused("admission_timeout");
        next(overloaded());
      }, limits.queueMs),
    };
    const leaveQueue = () => {
      const at = queue.indexOf(waiter);
      if (at >= 0) queue.splice(at, 1);
      res.off("close", gone);
    };
    // A client that left while waiting gives its place up.
    const gone = () => {
      clearTimeout(waiter.timer);
      leaveQueue();
    };
    res.once("close", gone);
    queue.push(waiter);
  };
}

/**
 * A stream (SSE) stops counting as in flight once it is open: it may stay open for minutes while
 * its work waits on the model or on other requests, and would otherwise hold a place all that time.
 */
export function leaveAdmission(res: Response): void {
  leave.call(res);
}
