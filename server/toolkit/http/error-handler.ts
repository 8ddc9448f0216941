import type { ErrorRequestHandler, RequestHandler } from "express";
import { DATABASE_RETRY_AFTER_SECONDS, isDatabaseUnavailable } from "../db/unavailable.ts";
import { forbidden, internalError, invalidField, invalidRequest, noSuchRoute, payloadTooLarge, serviceUnavailable, unauthorized, unsupportedMediaType, validationFailed } from "./error-catalogue.ts";
import { ApiError, errorBody } from "./errors.ts";
import { sendJson } from "./send-json.ts";

/** Errors of body-parser and express-openapi-validator carry a status and sometimes an `errors` list. */
interface FrameworkError {
  status?: number;
  statusCode?: number;
  type?: string;
  message?: string;
  path?: string;
  errors?: { path?: string; message?: string }[];
}

/** Turns anything thrown into an `ApiError`; unknown failures become a 500 without internals. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const e = (error ?? {}) as FrameworkError;
  const status = e.status ?? e.statusCode;
  if (e.type === "entity.parse.failed") return invalidRequest("The request body is not valid JSON");
  if (e.type === "body.not_utf8") return invalidField("/body", "is not valid UTF-8", e.message ?? "The request body is not valid UTF-8");
  if (e.type === "entity.too.large") return payloadTooLarge("The request body is larger than the service accepts");
  if (e.type === "encoding.unsupported" || e.type === "charset.unsupported") {
    return unsupportedMediaType(e.message ?? "Unsupported body encoding");
  }
  if (status === 500 && e.errors?.some((item) => item.path?.startsWith("/response"))) {
    return internalError("The response does not match the contract", {
      errors: e.errors.map((item) => ({ path: item.path ?? "", message: item.message ?? "" })),
    });
  }
  switch (status) {
    case 400:
      return validationFailed((e.errors ?? []).map((item) => ({ path: item.path ?? "", message: item.message ?? "invalid" })));
    case 401:
      return unauthorized("Credentials are missing or invalid");
    case 403:
      return forbidden(e.message ?? "Request refused");
    case 404:
    case 405:
      return noSuchRoute();
    case 413:
      return payloadTooLarge(e.message ?? "The request body is too large");
    case 415:
      return unsupportedMediaType(e.message ?? "Unsupported content type");
  }
  if (isDatabaseUnavailable(error)) {
    return serviceUnavailable("The database is unreachable; retry shortly", DATABASE_RETRY_AFTER_SECONDS);
  }
  return internalError();
}

/**
 * A path whose percent-encoding does not decode: Express's router cannot read its parameters. The
 * answer is the one the contract validator gave when it matched paths itself.
 */
function malformedUri(path: string): ApiError {
  return validationFailed([{ path, message: "malformed uri'" }]);
}

/** The last middleware: renders every error in the contract's envelope. Never sends a stack. */
export const errorHandler: ErrorRequestHandler = (error, req, res, _next) => {
  const apiError = error instanceof URIError && (error as FrameworkError).status === 400 ? malformedUri(req.path) : toApiError(error);
  // Only failures of the service itself are errors worth a stack; 501/502/503 are states it reports.
  if (apiError.status === 500) req.log?.error({ err: error }, "request failed");
  if (res.headersSent) {
    res.end();
    return;
  }
  res.set(apiError.headers);
  // RFC 6750 3: a 401 names the scheme that would have been accepted.
  if (apiError.status === 401) res.set("WWW-Authenticate", 'Bearer realm="persona"');
  sendJson(res, apiError.status, errorBody(apiError));
};

/** After every operation's route: a path or method the contract does not have (no 405 in the error catalog). */
export const unknownRoute: RequestHandler = (_req, _res, next) => {
  next(noSuchRoute());
};
