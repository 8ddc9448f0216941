import express, { type Express, type RequestHandler } from "express";
import { authenticate } from "./auth/authenticate.ts";
import { authLimits } from "./auth/limits.ts";
import { handlers as defaultHandlers } from "./handlers.ts";
import { routeOrder } from "./contract.ts";
import { errorHandler, unknownRoute } from "./http/errors.ts";
import { idempotency } from "./http/idempotency.ts";
import { keepRawBody } from "./http/raw-body.ts";
import { admission } from "./http/admission.ts";
import { loadShedding } from "./http/load-shedding.ts";
import { noSniff } from "./http/no-sniff.ts";
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

  app.use(noSniff);
  app.use(requestLog(app, services.log));
  app.use(loadShedding(config.loadShedDelayMs));
  app.use(admission(config.admission));
  app.use(rateLimit(services));
  app.use(
    express.json({
      limit: config.bodyLimitBytes,
      verify: (req, res, body) => {
        verifyUtf8Body(req, res, body);
        keepRawBody(req, body);
      },
    }),
  );
  app.use(express.urlencoded({ extended: false, limit: config.bodyLimitBytes, verify: verifyUtf8Form }));
  const checkResponses = await responseValidator(config);
  if (checkResponses.length) app.use(checkResponses);
  const shared = [authLimits(services), authenticate(services), idempotency(services)];
  for (const op of routeOrder) {
    const route = app.route(op.expressRoute);
    const method = op.method.toLowerCase() as "get" | "post" | "put" | "delete" | "patch";
    route[method](onlyMethod(op.method), ...requestValidation(op), ...shared, dispatch(handlers, services, op.operationId as OperationId));
  }
  app.use(unknownRoute);
  // OpenAI clients read OpenAI's error body; the rest of the service keeps its own.
  app.use("/openai/v1", openaiErrorHandler);
  app.use(errorHandler);
  return app;
}

/** Express answers HEAD with a GET route; the contract declares no HEAD, so it stays unknown. */
function onlyMethod(method: string): RequestHandler {
  return (req, _res, next) => next(req.method === method ? undefined : "route");
}
