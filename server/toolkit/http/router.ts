import type { Request, RequestHandler, Response } from "express";
import type { operations } from "../../../generated/openapi.d.ts";
import type { Logger } from "../logger.ts";
import type { Services } from "../services.ts";
import type { Knex } from "knex";
import { operationsById } from "../contract.ts";
import type { ReadRouting } from "../db/read-routing.ts";
import { callerOf, principalOf, type Principal } from "./principal.ts";
import { notFoundExplained, notImplemented } from "./error-catalogue.ts";
import { sendJson } from "./send-json.ts";

/** Every operationId of the contract. */
export type OperationId = keyof operations;
type Op<K extends OperationId> = operations[K];

type PathParams<K extends OperationId> = Op<K>["parameters"] extends { path: infer P } ? P : Record<string, never>;
type QueryParams<K extends OperationId> = Op<K>["parameters"] extends { query?: infer Q } ? NonNullable<Q> : Record<string, never>;
type Body<K extends OperationId> = Op<K> extends { requestBody: { content: infer C } }
  ? C[keyof C]
  : Op<K> extends { requestBody?: { content: infer C } }
    ? C[keyof C] | undefined
    : undefined;

type Responses<K extends OperationId> = Op<K>["responses"];
type SuccessStatus<K extends OperationId> = Extract<keyof Responses<K>, 200 | 201 | 202 | 204>;
type JsonOf<R> = R extends { content: { "application/json": infer B } } ? B : undefined;

/** A JSON answer whose status and body the contract declares for the operation. */
export type JsonResult<K extends OperationId> = {
  [S in SuccessStatus<K>]: { status: S; body: JsonOf<Responses<K>[S]>; headers?: Record<string, string> };
}[SuccessStatus<K>];

/** The handler wrote the response itself (streams, binary bodies, HTML, redirects). */
export const HANDLED = Symbol("handled");

export interface HandlerContext<K extends OperationId> {
  operationId: K;
  params: PathParams<K>;
  query: QueryParams<K>;
  body: Body<K>;
  /**
   * The caller the auth middleware resolved. Reading it on an operation that needs no credential
   * throws 401, so a handler can never act for nobody.
   */
  readonly principal: Principal;
  req: Request;
  res: Response;
  log: Logger;
  services: Services;
}

export type Handler<K extends OperationId> = (ctx: HandlerContext<K>) => Promise<JsonResult<K> | typeof HANDLED>;

/** One handler per operation of the contract: a missing or mistyped entry fails the type check. */
export type HandlerMap = { [K in OperationId]: Handler<K> };

/** Handlers for the operations of an area that is not built yet: an honest 501. Every area is live; none uses it. */
export function notLive<const Ids extends readonly OperationId[]>(area: string, ids: Ids): { [K in Ids[number]]: Handler<K> } {
  const handler = async () => {
    throw notImplemented(`The ${area} area is not live on this server yet`);
  };
  return Object.fromEntries(ids.map((id) => [id, handler])) as unknown as { [K in Ids[number]]: Handler<K> };
}

/** A request whose parameters and body are not known yet. */
type AnyRequest = Request<unknown, unknown, unknown, unknown>;

/** The operation whose route matched this request (set by its first stage, http/validator.ts). */
export function operationIdOf(req: AnyRequest): OperationId | undefined {
  return (req as AnyRequest & { openapi?: { schema?: { operationId?: string } } }).openapi?.schema?.operationId as OperationId | undefined;
}

/**
 * A request routed to operation `K` and checked against it: its path parameters,
 * query (coerced to the contract's types, defaults filled in) and body are K's.
 */
type ValidatedRequest<K extends OperationId> = Request<PathParams<K>, unknown, Body<K>, QueryParams<K>> & {
  openapi?: { pathParams?: PathParams<K> };
};

/** The request was routed to `operationId` and passed its checks, which vouch for its shape. */
function isValidatedFor<K extends OperationId>(req: AnyRequest, operationId: K): req is ValidatedRequest<K> {
  return operationIdOf(req) === operationId;
}

/**
 * A handler's context. A class rather than an object literal: a literal's getters are new functions
 * on every request, and the query is parsed only when a handler reads it.
 */
class RequestContext<K extends OperationId> implements HandlerContext<K> {
  readonly operationId: K;
  readonly req: Request;
  readonly res: Response;
  readonly services: Services;
  constructor(operationId: K, req: ValidatedRequest<K>, res: Response, services: Services) {
    this.operationId = operationId;
    this.req = req as unknown as Request;
    this.res = res;
    this.services = services;
  }
  /** The same request, typed by what its checks vouched for. */
  get #validated(): ValidatedRequest<K> {
    return this.req as unknown as ValidatedRequest<K>;
  }
  get principal(): Principal {
    return principalOf(this.req);
  }
  get params(): PathParams<K> {
    return this.#validated.openapi?.pathParams ?? this.#validated.params;
  }
  get query(): QueryParams<K> {
    return this.#validated.query;
  }
  get body(): Body<K> {
    return this.#validated.body;
  }
  get log(): Logger {
    return this.req.log;
  }
}

/** Runs the handler of one operation; generic so that handler, request and result are all typed by `K`. */
async function handle<K extends OperationId>(handlers: HandlerMap, operationId: K, req: Request, res: Response, services: Services): Promise<void> {
  const handler: Handler<K> | undefined = handlers[operationId];
  if (!handler || !isValidatedFor(req, operationId)) throw notFoundExplained(`No route ${req.method} ${req.path}`);
  const result = await handler(new RequestContext(operationId, req, res, services));
  if (result === HANDLED) return;
  const { status, body, headers } = result;
  if (headers) res.set(headers);
  if (status === 204 || body === undefined) res.status(status).end();
  else sendJson(res, status, body);
}

/**
 * Runs the handler of `operationId`, whose route matched the request and whose checks it passed. An
 * operation whose reads may lag (`replicaRead`), with replicas configured, gets the services reading
 * from the database `read-routing.ts` picks for its caller.
 */
export function dispatch(handlers: HandlerMap, services: Services, operationId: OperationId): RequestHandler {
  const reads = operationsById.get(operationId)?.replicaRead ? services.db.reads : undefined;
  return async (req, res, next) => {
    try {
      await handle(handlers, operationId, req, res, reads ? servicesReadingFrom(services, readerFor(reads, req)) : services);
    } catch (error) {
      next(error);
    }
  };
}

/** The database a lag-tolerant read of this request's caller runs on. */
function readerFor(reads: ReadRouting, req: Request): Knex {
  const caller = callerOf(req);
  return reads.reader(caller?.userId, caller?.issuedAt);
}

// The services of a request read from a replica: one object per database, made on first use.
const readingFrom = new WeakMap<Services, WeakMap<Knex, Services>>();

function servicesReadingFrom(services: Services, knex: Knex): Services {
  if (knex === services.db.knex) return services;
  let byKnex = readingFrom.get(services);
  if (!byKnex) readingFrom.set(services, (byKnex = new WeakMap()));
  let reading = byKnex.get(knex);
  if (!reading) byKnex.set(knex, (reading = { ...services, db: { ...services.db, knex } }));
  return reading;
}
