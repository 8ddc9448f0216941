import type { Request, RequestHandler, Response } from "express";
import type { Services } from "../services.ts";
import { operationsById } from "../contract.ts";
import { secretBox, type SecretBox } from "../db/secret-box.ts";
import { clientIdentity } from "./client-identity.ts";
import { conflict } from "./error-catalogue.ts";
import { operationIdOf } from "./router.ts";
import { claimKey, completeKey, findKey, reclaimKey, releaseKey, type StoredRequest } from "./idempotency-store.ts";

/** Marks an answer that repeats an earlier request's outcome instead of doing the work again. */
export const REPLAYED = "Idempotent-Replayed";

/**
 * What the handler of an operation that does not answer JSON (the chat stream) gets for its
 * `Idempotency-Key`: such a response cannot be stored and replayed byte for byte, so the handler
 * records an outcome of its own, and a retry receives it as `previous` to replay it or to finish
 * what the first attempt left. `Outcome` is the handler's own record (JSON).
 */
export interface IdempotentOutcome<Outcome> {
  /** The outcome an earlier request with this key recorded; undefined on the first request. */
  readonly previous: Outcome | undefined;
  /** Takes the key over again to redo an unfinished attempt; false when another retry holds it. */
  reclaim(): Promise<boolean>;
  /** Records the outcome for retries. A key that is held and not recorded is released on close. */
  record(outcome: Outcome): Promise<void>;
  /** Marks the response as the replay of `previous` (the `Idempotent-Replayed` header). */
  markReplayed(): void;
}

const OUTCOME = Symbol("idempotent outcome");
type WithOutcome = Request & { [OUTCOME]?: IdempotentOutcome<unknown> };

/**
 * The `Idempotency-Key` of this request, for the handler of an operation that does not answer JSON;
 * undefined when the request carries none (or the operation does not declare it).
 */
export function idempotentOutcomeOf<Outcome>(req: Request): IdempotentOutcome<Outcome> | undefined {
  return (req as WithOutcome)[OUTCOME] as IdempotentOutcome<Outcome> | undefined;
}

/**
 * `Idempotency-Key` on the operations whose contract declares it: the first request's JSON
 * response is stored and a retry within 24 h gets it back, with nothing done twice. The same key
 * with a different request is 409; so is a retry while the first is still running. A 5xx is not
 * stored, so the client may retry it. Operations that do not answer JSON record their own outcome
 * (`idempotentOutcomeOf`); their JSON errors are not stored.
 *
 * Issue 31 L3: what is stored is sealed in the installation's secret box, since an answer may hold
 * a credential shown once (a new account's tokens, an API key, a webhook's signing secret); a
 * retry still gets it back, which is what the key is for. The request is remembered by a keyed
 * hash, since its body may hold a password that an unkeyed hash would let a reader test guesses
 * against.
 */
export function idempotency(services: Services): RequestHandler {
  const { knex } = services.db;
  const boxes = () =>
    Promise.all([secretBox(knex, services.config.secretsKey, ANSWERS), secretBox(knex, services.config.secretsKey, REQUESTS)]);
  return async (req, res, next) => {
    const key = req.get("idempotency-key");
    const operationId = operationIdOf(req);
    if (!key || !operationId || !operationsById.get(operationId)?.idempotent) return next();

    const scope = clientIdentity(req);
    const answersJson = operationsById.get(operationId)!.answersJson;
    let stored = false;
    let opened: [SecretBox, SecretBox];
    try {
      opened = await boxes();
    } catch (error) {
      return next(error);
    }
    const [answers, requests] = opened;
    const requestHash = requestHashOf(requests, req);
    const seal = (body: unknown) => answers.seal(JSON.stringify(body ?? null));
    try {
      if (!(await claimKey(knex, scope, key, operationId, requestHash, services.now()))) {
        const previous = await findKey(knex, scope, key);
        if (!previous) return next(conflict("This Idempotency-Key was just released; retry the request"));
        if (previous.request_hash !== requestHash || previous.operation_id !== operationId) {
          return next(conflict("This Idempotency-Key was already used with a different request"));
        }
        if (previous.state !== "done") {
          return next(conflict("A request with this Idempotency-Key is still in progress"));
        }
        const answer = storedAnswer(answers, previous);
        if (!answer) {
          return next(conflict("The answer stored for this Idempotency-Key can no longer be read; send the request with a new key"));
        }
        if (!answersJson) {
          attachOutcome(req, res, scope, key, seal, { previous: answer.body, held: false });
          return next();
        }
        res.set({ ...(previous.response_headers ?? {}), [REPLAYED]: "true" });
        res.status(previous.status!).json(answer.body);
        return;
      }
    } catch (error) {
      return next(error);
    }
    if (!answersJson) {
      attachOutcome(req, res, scope, key, seal, { previous: undefined, held: true });
      return next();
    }
    storeBeforeSending(res, async (status, body) => {
      stored = true;
      if (status < 500) {
        const location = res.get("location");
        await completeKey(knex, scope, key, { status, sealedBody: seal(body), headers: location ? { Location: location } : {} });
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

  function attachOutcome(
    req: Request,
    res: Response,
    scope: string,
    key: string,
    seal: (body: unknown) => string,
    state: { previous: unknown; held: boolean },
  ): void {
    let recorded = false;
    const outcome: IdempotentOutcome<unknown> = {
      previous: state.previous,
      reclaim: async () => (state.held = await reclaimKey(knex, scope, key)),
      record: async (value) => {
        recorded = true;
        await completeKey(knex, scope, key, { status: 200, sealedBody: seal(value), headers: {} });
      },
      markReplayed: () => {
        res.set(REPLAYED, "true");
      },
    };
    (req as WithOutcome)[OUTCOME] = outcome;
    res.once("close", () => {
      if (state.held && !recorded) releaseKey(knex, scope, key).catch((error: unknown) => req.log.error({ err: error }, "could not release an idempotency key"));
    });
  }
}

// The secret box's purposes (server/toolkit/db/secret-box.ts): stored answers, and the keyed request hash.
const ANSWERS = "persona idempotent answers v1";
const REQUESTS = "persona idempotent requests v1";

/** What tells this request from another with the same key: a keyed hash of its method, URL and body. */
function requestHashOf(box: SecretBox, req: Request): string {
  const hash = box.keyedHash().update(`${req.method} ${req.originalUrl}\n${JSON.stringify(req.body ?? null)}`);
  // A multipart body's files are not in req.body: the same key with another file is another request.
  for (const file of (req.files as { fieldname: string; originalname: string; buffer: Buffer }[] | undefined) ?? []) {
    hash.update(`\n${file.fieldname}\n${file.originalname}\n`).update(file.buffer);
  }
  return hash.digest("hex");
}

/** The answer a finished row holds; undefined when it cannot be opened (SECRETS_KEY changed since). */
function storedAnswer(box: SecretBox, row: StoredRequest): { body: unknown } | undefined {
  if (row.response_sealed === null) return { body: null };
  try {
    return { body: JSON.parse(box.open(row.response_sealed)) as unknown };
  } catch {
    return undefined;
  }
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
