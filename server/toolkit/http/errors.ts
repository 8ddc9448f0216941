import type { components } from "../../../generated/openapi.d.ts";

export type ErrorCode = components["schemas"]["ErrorCode"];
export type ErrorBody = components["schemas"]["Error"];
export type ErrorDetails = NonNullable<components["schemas"]["ErrorInfo"]["details"]>;

/**
 * The one error type of the service; the error middleware renders it as the contract's error body.
 * Build it with a factory of the error catalogue (error-catalogue.ts), which fixes the status of each code.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly details: ErrorDetails | undefined;
  readonly headers: Record<string, string>;

  constructor(status: number, code: ErrorCode, message: string, details?: ErrorDetails, headers: Record<string, string> = {}) {
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

export function errorBody(error: ApiError): ErrorBody {
  return { error: { code: error.code, message: error.message, ...(error.details ? { details: error.details } : {}) } };
}
