import express, { type Express } from "express";
import { authenticate } from "./auth/authenticate.ts";
import { authLimits } from "./auth/limits.ts";
import { handlers as defaultHandlers } from "./handlers.ts";
import { errorHandler, unknownRoute } from "./http/errors.ts";
import { idempotency } from "./http/idempotency.ts";
import { rateLimit } from "./http/rate-limit.ts";
import { requestLog } from "./http/request-log.ts";
import { dispatch, type HandlerMap } from "./http/router.ts";
import { contractValidator } from "./http/validator.ts";
import { verifyUtf8Body, verifyUtf8Form } from "./http/well-formed.ts";
import type { Services } from "./services.ts";

/**
 * The HTTP app: request id and logs, the shared rate limit, body parsing, the contract validator,
 * the auth area's attempt limits and credential check (which sets the request's principal),
 * idempotency, then one router that dispatches by operationId. Every error leaves in the envelope.
 */
export function createApp(services: Services, handlers: HandlerMap = defaultHandlers): Express {
  const { config } = services;
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", config.trustProxy);
  app.set("etag", false);

  app.use(requestLog(app, services.log));
  app.use(rateLimit(services));
  app.use(express.json({ limit: config.bodyLimitBytes, verify: verifyUtf8Body }));
  app.use(express.urlencoded({ extended: false, limit: config.bodyLimitBytes, verify: verifyUtf8Form }));
  app.use(contractValidator(config));
  app.use(authLimits(services));
  app.use(authenticate(services));
  app.use(idempotency(services));
  app.use(dispatch(handlers, services));
  app.use(unknownRoute);
  app.use(errorHandler);
  return app;
}
