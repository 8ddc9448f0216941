import { createHash } from "node:crypto";
import type { RequestHandler, Response } from "express";
import type { Services } from "../services.ts";
import { operationsById } from "../contract.ts";
import { clientIdentity } from "./client-identity.ts";
import { ApiError } from "./errors.ts";
import { operationIdOf } from "./router.ts";
import { claimKey, completeKey, findKey, releaseKey } from "./idempotency-store.ts";

const REPLAYED = "Idempotent-Replayed";

/**
 * `Idempotency-Key` on the operations whose contract declares it: the first request's JSON
 * response is stored and a retry within 24 h gets it back, with nothing done twice. The same key
 * with a different request is 409; so is a retry while the first is still running. A 5xx is not
 * stored, so the client may retry it.
 */
export function idempotency(services: Services): RequestHandler {
  const { knex } = services.db;
  return async (req, res, next) => {
    const key = req.get("idempotency-key");
    const operationId = operationIdOf(req);
    if (!key || !operationId || !operationsById.get(operationId)?.idempotent) return next();

    const scope = clientIdentity(req);
    let stored = false;
    const requestHash = createHash("sha256")
      .update(`${req.method} ${req.originalUrl}\n${JSON.stringify(req.body ?? null)}`)
      .digest("hex");
    try {
      if (!(await claimKey(knex, scope, key, operationId, requestHash, services.now()))) {
        const previous = await findKey(knex, scope, key);
        if (!previous) return next(new ApiError(409, "conflict", "This Idempotency-Key was just released; retry the request"));
        if (previous.request_hash !== requestHash || previous.operation_id !== operationId) {
          return next(new ApiError(409, "conflict", "This Idempotency-Key was already used with a different request"));
        }
        if (previous.state !== "done") {
          return next(new ApiError(409, "conflict", "A request with this Idempotency-Key is still in progress"));
        }
        res.set({ ...(previous.response_headers ?? {}), [REPLAYED]: "true" });
        res.status(previous.status!).json(previous.response_body);
        return;
      }
    } catch (error) {
      return next(error);
    }
    storeBeforeSending(res, async (status, body) => {
      stored = true;
      if (status < 500) {
        const location = res.get("location");
        await completeKey(knex, scope, key, { status, body, headers: location ? { Location: location } : {} });
      } else {
        await releaseKey(knex, scope, key);
      }
    });
    // A response that was not JSON (or a dropped connection) leaves nothing to replay.
    res.once("close", () => {
      if (!stored) releaseKey(knex, scope, key).catch((error: unknown) => req.log.error({ err: error }, "could not release an idempotency key"));
    });
    next();
  };
}

/**
 * Stores a JSON response before it is sent, so that a client retrying the moment it has the answer
 * finds it stored rather than "in progress".
 */
function storeBeforeSending(res: Response, store: (status: number, body: unknown) => Promise<void>): void {
  const json = res.json.bind(res);
  res.json = (value: unknown) => {
    store(res.statusCode, value)
      .catch((error: unknown) => res.req.log.error({ err: error }, "could not store the idempotent response"))
      .finally(() => json(value));
    return res;
  };
}
