import express, { type Express, type Request, type RequestHandler, type Router } from "express";
import { authLimits, identifyCaller, requireCredential } from "./areas/auth/index.ts";
import { handlers as defaultHandlers } from "./areas.ts";
import { routeOrder } from "./toolkit/contract.ts";
import { errorHandler, unknownRoute } from "./toolkit/http/error-handler.ts";
import { chain } from "./toolkit/http/chain.ts";
import { idempotency } from "./toolkit/http/idempotency.ts";
import { readBody } from "./toolkit/http/body.ts";
import { admission } from "./toolkit/http/admission.ts";
import { crossOrigin } from "./toolkit/http/cors.ts";
import type { ErrorDialect } from "./toolkit/http/error-dialects.ts";
import { loadShedding } from "./toolkit/http/load-shedding.ts";
import { requestMetrics } from "./toolkit/metrics/http.ts";
import { noSniff } from "./toolkit/http/no-sniff.ts";
import { operationRouter } from "./toolkit/http/operation-router.ts";
import { rateLimit } from "./toolkit/http/rate-limit.ts";
import { requestLog } from "./toolkit/http/request-log.ts";
import { dispatch, type HandlerMap, type OperationId } from "./toolkit/http/router.ts";
import { responseValidator } from "./toolkit/http/response-validator.ts";
import { bodyValidation, identifyOperation, requestValidation } from "./toolkit/http/validator.ts";
import { announceWriter } from "./toolkit/http/writers.ts";
import { openaiError, openaiErrorHandler } from "./areas/openai/index.ts";
import type { Services } from "./toolkit/services.ts";

/**
 * The error shapes of the service's path prefixes besides its own envelope, for the answers given
 * below Express's error handlers (http/error-dialects.ts): the listener's and the body deadline's.
 */
export const errorDialects: readonly ErrorDialect[] = [{ prefix: "/openai/v1", answer: openaiError }];

/**
 * The HTTP app: request id and logs, CORS for the origins of CORS_ORIGINS (http/cors.ts), load shedding, who is calling (a credential, when sent, is
 * resolved before anything else) and the rate limit counted against that caller, the user or the
 * client's address (issue 31 M1); then one Express route per operation of the contract, which
 * refuses what needs a credential it lacks, and only then reads the body (http/body.ts, with its
 * own deadline) and takes an admission place, so that neither a stranger nor a slow body holds
 * anything of the service (issue 31 H3, H5). Then the contract's checks of the body
 * (http/validator.ts), the auth area's attempt limits, idempotency and the handler. Every error
 * leaves in the envelope.
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
  const cors = crossOrigin(config.corsOrigins);
  // One admission control for every operation and page.
  const admitted = admission(config.admission);
  app.use(chain([
    // Times and counts every request by its operation and status, while metrics are on.
    ...requestMetrics(),
    (req, res, next) => {
      noSniff(res);
      logged(req, res, next);
    },
    // Before anything is counted or refused: a preflight is answered here, and a refusal further
    // on still carries the CORS headers a page needs to read it.
    ...(cors ? [cors] : []),
    loadShedding(config.loadShedDelayMs),
    identifyCaller(services),
    rateLimit(services),
    ...(await responseValidator(config)),
    probe(dispatch(handlers, services, "ops_healthz")),
  ]));
  // With replicas, a request that may write says so first (http/writers.ts).
  const after = [...(services.db.reads ? [announceWriter(services.db.reads)] : []), authLimits(services), idempotency(services)];
  /**
   * A page for browsers (an operation whose `@meta` says `page`: the built-in pages of
   * server/areas/pages/, the embed's loader, chat page and script of server/areas/embeds/) takes the
   * same route, body deadline and admission place, but its parameters and form are not checked
   * against the contract's: a page reads what it needs and ignores the rest (a shared link's
   * `utm_*`, `fbclid`), and answers every refusal of its own as a page
   * (docs/adr/0313-built-in-pages-csp-and-csrf-for-the-e-mail-pages.md). A page is credential-free
   * (`npm run gen` refuses a `page` that is not), so these stages check no credential.
   */
  function pageStages(op: (typeof routeOrder)[number]): RequestHandler {
    return chain([onlyMethod(op.method), identifyOperation(op), ...requestValidation(op), readBody(op, config, errorDialects), admitted, dispatch(handlers, services, op.operationId as OperationId)]);
  }
  const routes = routeOrder.map((op) => {
    const method = op.method.toLowerCase() as "get" | "post" | "put" | "delete" | "patch";
    const stages = op.page ? pageStages(op) : chain([
      onlyMethod(op.method),
      identifyOperation(op),
      ...requestValidation(op),
      requireCredential,
      readBody(op, config, errorDialects),
      admitted,
      ...bodyValidation(op),
      ...after,
      dispatch(handlers, services, op.operationId as OperationId),
    ]);
    return { path: op.expressRoute, add: (router: Router) => void router.route(op.expressRoute)[method](stages) };
  });
  app.use(operationRouter(routes));
  app.use(unknownRoute);
  // OpenAI clients read OpenAI's error body; the rest of the service keeps its own.
  app.use("/openai/v1", openaiErrorHandler);
  app.use(errorHandler);
  return app;
}

/**
 * `GET /healthz` without a query or body, as load balancers send it, skips the operation's route:
 * it has nothing its stages check (no parameter, body or credential), so only the app-level stages
 * (request id, load shedding, caller, rate limit) run before its handler. Anything else goes the ordinary way.
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
