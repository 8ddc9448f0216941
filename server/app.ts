import { randomUUID } from "node:crypto";
import express, { type Express } from "express";
import { pinoHttp } from "pino-http";
import { authenticate } from "./auth/authenticate.ts";
import { authLimits } from "./auth/limits.ts";
import { handlers as defaultHandlers } from "./handlers.ts";
import { errorHandler, unknownRoute } from "./http/errors.ts";
import { idempotency } from "./http/idempotency.ts";
import { rateLimit } from "./http/rate-limit.ts";
import { dispatch, type HandlerMap } from "./http/router.ts";
import { contractValidator } from "./http/validator.ts";
import { verifyUtf8Body, verifyUtf8Form } from "./http/well-formed.ts";
import { httpSerializers } from "./logger.ts";
import type { Services } from "./services.ts";

const REQUEST_ID = /^[\w.:-]{1,128}$/;

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

  app.use(
    pinoHttp({
      logger: services.log,
      serializers: httpSerializers,
      genReqId: (req, res) => {
        const given = req.headers["x-request-id"];
        const id = typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
        res.setHeader("X-Request-Id", id);
        return id;
      },
      customLogLevel: (_req, res, error) =>
        error || res.statusCode === 500 ? "error" : res.statusCode >= 500 ? "warn" : res.statusCode >= 400 ? "info" : "debug",
      quietReqLogger: true,
      // pino-http gives every 5xx line a made-up Error with a stack. The error middleware logs a real
      // failure (500) with its own stack; every other refusal is an answer, logged as one plain line.
      customErrorObject: (_req, _res, _error, { err: _made, ...line }) => line,
      customErrorMessage: (_req, res) => (res.statusCode === 500 ? "request failed" : "request completed"),
    }),
  );
  app.use(rateLimit(services));
  // The reference, the OpenAPI document and an index at `/`: outside the contract, so before its validator.
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
