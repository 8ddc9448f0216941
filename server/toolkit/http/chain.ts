import type { NextFunction, RequestHandler } from "express";

/**
 * Runs `stages` in order as one Express handler. Each stage that Express runs on its own costs a
 * turn of its router (matching a layer, its `next`), a measurable share of a small request; chained
 * here, a stage costs a function call. A stage's error, `"route"` or `"router"` goes on to Express
 * as it would have, and a rejected promise is passed on as Express 5 does.
 */
export function chain(stages: readonly RequestHandler[]): RequestHandler {
  if (stages.length === 1) return stages[0]!;
  return (req, res, next) => {
    let index = 0;
    const step: NextFunction = (error?: unknown) => {
      if (error) return next(error);
      const stage = stages[index++];
      if (stage === undefined) return next();
      try {
        const returned: unknown = stage(req, res, step);
        if (returned instanceof Promise) returned.then(undefined, (rejected: unknown) => next(rejected ?? new Error("Rejected promise")));
      } catch (thrown) {
        next(thrown);
      }
    };
    step();
  };
}
