import express, { type Express, type Request, type RequestHandler, type Router } from "express";
import { authenticate } from "./auth/authenticate.ts";
import { authLimits } from "./auth/limits.ts";
import { handlers as defaultHandlers } from "./handlers.ts";
import { routeOrder } from "./contract.ts";
import { errorHandler, unknownRoute } from "./http/errors.ts";
import { chain } from "./http/chain.ts";
import { idempotency } from "./http/idempotency.ts";
import { keepRawBody } from "./http/raw-body.ts";
import { admission } from "./http/admission.ts";
import { loadShedding } from "./http/load-shedding.ts";
import { noSniff } from "./http/no-sniff.ts";
import { operationRouter } from "./http/operation-router.ts";
import { rateLimit } from "./http/rate-limit.ts";
import { requestLog } from "./http/request-log.ts";
import { dispatch, type HandlerMap, type OperationId } from "./http/router.ts";
import { requestValidation, responseValidator } from "./http/validator.ts";
import { verifyUtf8Body, verifyUtf8Form } from "./http/well-formed.ts";
import { openaiErrorHandler } from "./openai/errors.ts";
import type { Services } from "./services.ts";

/**
 * The HTTP app: request id and logs, the shared rate limit, body parsing, then one Express route per
 * operation of the contract: its contract checks (http/validator.ts), the auth area's attempt
 * limits and credential check (which sets the request's principal), idempotency and its handler.
 * Every error leaves in the envelope.
 */
export async function createApp(services: Services, handlers: HandlerMap = defaultHandlers): Promise<Express> {
  const { config } = services;
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", config.trustProxy);
  app.set("etag", false);

  const logged = requestLog(app, services.log);
  // Every request's stages as one Express handler (http/chain.ts): each stage Express runs on its
  // own costs every request a turn of its router.
  app.use(chain([
    (req, res, next) => {
      noSniff(res);
      logged(req, res, next);
    },
    loadShedding(config.loadShedDelayMs),
    admission(config.admission),
    rateLimit(services),
    bodyParsers(config.bodyLimitBytes),
    ...(await responseValidator(config)),
    probe(dispatch(handlers, services, "ops_healthz")),
  ]));
  const shared = [authLimits(services), authenticate(services), idempotency(services)];
  const routes = routeOrder.map((op) => {
    const method = op.method.toLowerCase() as "get" | "post" | "put" | "delete" | "patch";
    const stages = chain([onlyMethod(op.method), ...requestValidation(op), ...shared, dispatch(handlers, services, op.operationId as OperationId)]);
    return { path: op.expressRoute, add: (router: Router) => void router.route(op.expressRoute)[method](stages) };
  });
  app.use(operationRouter(routes));
  app.use(unknownRoute);
  // OpenAI clients read OpenAI's error body; the rest of the service keeps its own.
  app.use("/openai/v1", openaiErrorHandler);
  app.use(errorHandler);
  return app;
}

const FORM = /^\s*application\/x-www-form-urlencoded\s*(;|$)/i;

/**
 * JSON and form bodies, as one stage that a request without a body (most) leaves at once, where the
 * two parsers were two stages that each looked for a body.
 */
function bodyParsers(limit: number): RequestHandler {
  const json = express.json({
    limit,
    verify: (req, res, body) => {
      verifyUtf8Body(req, res, body);
      keepRawBody(req, body);
    },
  });
  const form = express.urlencoded({ extended: false, limit, verify: verifyUtf8Form });
  return (req, res, next) => {
    // body-parser's own test for a body; without one both parsers only set req.body.
    if (req.headers["transfer-encoding"] === undefined && req.headers["content-length"] === undefined) {
      if (!Object.hasOwn(req, "body")) req.body = undefined;
      return next();
    }
    // One parser, by the media type: each parser first checks the type for itself, and a JSON body
    // then went on to the form parser only to be told it was not a form.
    return FORM.test(req.headers["content-type"] ?? "") ? form(req, res, next) : json(req, res, next);
  };
}

/**
 * `GET /healthz` without a query or body, as load balancers send it, skips the operation's route:
 * it has nothing its stages check (no parameter, body or credential), so only the app-level stages
 * (request id, rate limit) run before its handler. Anything else goes the ordinary way.
 */
function probe(healthz: RequestHandler): RequestHandler {
  // One description for every probe: nothing changes it.
  const openapi = Object.freeze({ schema: Object.freeze({ operationId: "ops_healthz" }), pathParams: Object.freeze({}), expressRoute: "/healthz" });
  return (req, res, next) => {
    if (req.url !== "/healthz" || req.method !== "GET" || req.headers["content-length"] !== undefined || req.headers["transfer-encoding"] !== undefined) return next();
    (req as Request & { openapi?: unknown }).openapi ??= openapi;
    return healthz(req, res, next);
  };
}

/** Express answers HEAD with a GET route; the contract declares no HEAD, so it stays unknown. */
function onlyMethod(method: string): RequestHandler {
  return (req, _res, next) => next(req.method === method ? undefined : "route");
}
