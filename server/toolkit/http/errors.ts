import type { ErrorRequestHandler, RequestHandler } from "express";
import type { components } from "../../../generated/openapi.d.ts";
import { DATABASE_RETRY_AFTER_SECONDS, isDatabaseUnavailable } from "../db/unavailable.ts";
import { sendJson } from "./send-json.ts";

export type ErrorCode = components["schemas"]["ErrorCode"];
export type ErrorBody = components["schemas"]["Error"];
type Details = NonNullable<components["schemas"]["ErrorInfo"]["details"]>;

/** The one error type of the service; the error middleware renders it as the contract's error body. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly details: Details | undefined;
  readonly headers: Record<string, string>;

  constructor(status: number, code: ErrorCode, message: string, details?: Details, headers: Record<string, string> = {}) {
    // An ApiError is an answer, not a bug: nobody reads its stack, and capturing one costs time on
    // every refused request.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
    this.status = status;
    this.code = code;
    this.details = details;
    this.headers = headers;
  }
}

ApiError.prototype.name = "ApiError";

export const notFound = (what: string) => new ApiError(404, "not_found", `${what} not found`);

/** Errors of body-parser and express-openapi-validator carry a status and sometimes an `errors` list. */
interface FrameworkError {
  status?: number;
  statusCode?: number;
  type?: string;
  message?: string;
  path?: string;
  errors?: { path?: string; message?: string }[];
}

const codeByStatus: Record<number, ErrorCode> = {
  400: "invalid_request",
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  405: "not_found",
  413: "payload_too_large",
  415: "unsupported_media_type",
};

/** Turns anything thrown into an `ApiError`; unknown failures become a 500 without internals. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const e = (error ?? {}) as FrameworkError;
  const status = e.status ?? e.statusCode;
  if (e.type === "entity.parse.failed") return new ApiError(400, "invalid_request", "The request body is not valid JSON");
  if (e.type === "body.not_utf8") return new ApiError(400, "invalid_request", e.message ?? "The request body is not valid UTF-8", { errors: [{ path: "/body", message: "is not valid UTF-8" }] });
  if (e.type === "entity.too.large") return new ApiError(413, "payload_too_large", "The request body is larger than the service accepts");
  if (e.type === "encoding.unsupported" || e.type === "charset.unsupported") {
    return new ApiError(415, "unsupported_media_type", e.message ?? "Unsupported body encoding");
  }
  if (status === 500 && e.errors?.some((item) => item.path?.startsWith("/response"))) {
    return new ApiError(500, "internal_error", "The response does not match the contract", {
      errors: e.errors.map((item) => ({ path: item.path ?? "", message: item.message ?? "" })),
    });
  }
  if (status && codeByStatus[status]) {
    if (status === 400) {
      const errors = (e.errors ?? []).map((item) => ({ path: item.path ?? "", message: item.message ?? "invalid" }));
      return new ApiError(400, "invalid_request", summarize(errors), { errors });
    }
    if (status === 404 || status === 405) return new ApiError(404, "not_found", "No such route");
    if (status === 401) return new ApiError(401, "unauthorized", "Credentials are missing or invalid");
    if (status === 415) return new ApiError(415, "unsupported_media_type", e.message ?? "Unsupported content type");
    if (status === 413) return new ApiError(413, "payload_too_large", e.message ?? "The request body is too large");
    return new ApiError(status, codeByStatus[status]!, e.message ?? "Request refused");
  }
  if (isDatabaseUnavailable(error)) {
    return new ApiError(503, "service_unavailable", "The database is unreachable; retry shortly", undefined, { "Retry-After": String(DATABASE_RETRY_AFTER_SECONDS) });
  }
  return new ApiError(500, "internal_error", "Internal server error");
}

function summarize(errors: { path: string; message: string }[]): string {
  if (!errors.length) return "Request validation failed";
  const first = errors[0]!;
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : "";
  return `Invalid request: ${first.path.replace(/^\//, "").replace(/\//g, ".")} ${first.message}${more}`;
}

/**
 * A path whose percent-encoding does not decode: Express's router cannot read its parameters. The
 * answer is the one the contract validator gave when it matched paths itself.
 */
function malformedUri(path: string): ApiError {
  const errors = [{ path, message: "malformed uri'" }];
  return new ApiError(400, "invalid_request", summarize(errors), { errors });
}

export function errorBody(error: ApiError): ErrorBody {
  return { error: { code: error.code, message: error.message, ...(error.details ? { details: error.details } : {}) } };
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
  next(new ApiError(404, "not_found", "No such route"));
};
