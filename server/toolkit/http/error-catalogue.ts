import type { components } from "../../../generated/openapi.d.ts";
import { ProviderUnavailableError, UpstreamError } from "../providers/errors.ts";
import { ApiError, type ErrorDetails } from "./errors.ts";

/**
 * The error catalogue: every refusal the service answers is built here, by a factory that fixes the
 * status of its contract error code, so that a code never travels with a status of the caller's
 * choosing. A test checks that every code used here is one of the contract's `ErrorCode` values.
 */

export interface FieldError {
  path: string;
  message: string;
}

/** The one wording of a list of field errors: the first field, dotted, and how many more. */
export function summarize(errors: readonly FieldError[]): string {
  if (!errors.length) return "Request validation failed";
  const first = errors[0]!;
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : "";
  return `Invalid request: ${first.path.replace(/^\//, "").replace(/\//g, ".")} ${first.message}${more}`;
}

// 400 invalid_request

/** The moderation provider flagged the text and the server refuses flagged content (issue 41); `details`: `categories`, `provider`. */
export const contentFlagged = (message: string, details: ErrorDetails) => new ApiError(400, "content_flagged", message, details);

/** A request the service refuses as a whole, in its own words. */
export const invalidRequest = (message: string, details?: ErrorDetails) => new ApiError(400, "invalid_request", message, details);

/** One field is wrong: `path` names it (`/body/url`), `problem` says what is wrong with it. */
export const invalidField = (path: string, problem: string, message = `${path} ${problem}`) =>
  new ApiError(400, "invalid_request", message, { errors: [{ path, message: problem }] });

/** Several fields may be wrong, with a message of the caller's wording. */
export const invalidFields = (message: string, errors: FieldError[]) => new ApiError(400, "invalid_request", message, { errors });

/** The contract's checks failed: the message summarizes the field errors. */
export const validationFailed = (errors: FieldError[]) => new ApiError(400, "invalid_request", summarize(errors), { errors });

/** A multipart upload lacks its file part. */
export const missingMultipartField = (name: string) =>
  invalidField(`/body/${name}`, "is required", `The multipart field \`${name}\` is required`);

/** 408: the request's body did not arrive in time (the code stays `invalid_request`). */
export const requestTimeout = (message: string) => new ApiError(408, "invalid_request", message);

/** 431: the request line and headers are too large (the code stays `invalid_request`). */
export const headersTooLarge = (message: string) => new ApiError(431, "invalid_request", message);

// 401 unauthorized

export const unauthorized = (message = "Credentials are missing or invalid") => new ApiError(401, "unauthorized", message);

// 402 plan_limit_exceeded

/** The caller's plan does not allow this; `details` carries `limit`, `used` and `plan` when counted. */
export const planLimit = (message: string, details?: ErrorDetails) => new ApiError(402, "plan_limit_exceeded", message, details);

// 403 forbidden

export const forbidden = (message: string) => new ApiError(403, "forbidden", message);

// 403 account_pending_deletion

/**
 * A login with the right password to an account scheduled for deletion: `details` say until when
 * and whether `POST /v1/auth/me/restore` can still undo it.
 */
export const accountPendingDeletion = (message: string, details: ErrorDetails) => new ApiError(403, "account_pending_deletion", message, details);

// 403 account_suspended

/**
 * A login, a refresh or any credential of a suspended account (issue 41): `details` say since when,
 * why, and which operation still exports its data.
 */
export const accountSuspended = (message: string, details: ErrorDetails) => new ApiError(403, "account_suspended", message, details);

/** The credential lacks the operation's scope: `details` names it and every scope that grants it. */
export const missingScope = (message: string, requiredScope: string, grantingScopes: string[]) =>
  new ApiError(403, "forbidden", message, { required_scope: requiredScope, granting_scopes: grantingScopes });

// 404 not_found

/** `${what} not found`: the answer for what does not exist or the caller may not see. */
export const notFound = (what: string) => new ApiError(404, "not_found", `${what} not found`);

/** A 404 in a sentence of its own (what is missing and, where useful, what to do instead). */
export const notFoundExplained = (message: string, details?: ErrorDetails) => new ApiError(404, "not_found", message, details);

/** A path or method the contract does not have (the error catalog has no 405). */
export const noSuchRoute = (message = "No such route") => new ApiError(404, "not_found", message);

// 409 conflict

export const conflict = (message: string, details?: ErrorDetails) => new ApiError(409, "conflict", message, details);

// 413 payload_too_large

export const payloadTooLarge = (message: string) => new ApiError(413, "payload_too_large", message);

// 415 unsupported_media_type

export const unsupportedMediaType = (message: string) => new ApiError(415, "unsupported_media_type", message);

// 429 rate_limited

/** Too many requests: `retry_after` in the details and `Retry-After` in the headers say when to retry. */
export const rateLimited = (message: string, retryAfterSeconds: number) =>
  new ApiError(429, "rate_limited", message, { retry_after: retryAfterSeconds }, { "Retry-After": String(retryAfterSeconds) });

// 500 internal_error

export const internalError = (message = "Internal server error", details?: ErrorDetails) => new ApiError(500, "internal_error", message, details);

// 501 not_implemented

export const notImplemented = (message: string) => new ApiError(501, "not_implemented", message);

// 502 upstream_error

/** An outside provider failed; the message is ours, never the provider's own text. */
export const upstreamFailed = (message: string) => new ApiError(502, "upstream_error", message);

// 502 reply_flagged

/** The server checks replies and the moderation provider flagged this one (issue 41); `details`: `categories`, `provider`. */
export const replyFlagged = (message: string, details: ErrorDetails) => new ApiError(502, "reply_flagged", message, details);

// 503 provider_unavailable, service_unavailable

/** No provider can do this on this server. */
export const providerUnavailable = (message: string) => new ApiError(503, "provider_unavailable", message);

/** The service cannot answer now; `Retry-After` says when to try again. */
export const serviceUnavailable = (message: string, retryAfterSeconds: number) =>
  new ApiError(503, "service_unavailable", message, undefined, { "Retry-After": String(retryAfterSeconds) });

/** The same answer carrying other details (e.g. what was stored before a failure). */
export const withDetails = (error: ApiError, details: ErrorDetails) => new ApiError(error.status, error.code, error.message, details, error.headers);

/** The same error in other words (a translation naming the caller's own fields), with `details`. */
export const reworded = (error: ApiError, message: string, details: ErrorDetails) => new ApiError(error.status, error.code, message, details, error.headers);

/** Per-call answers where a caller deliberately differs from the usual mapping. */
export interface ProviderFailureOverrides {
  upstream?: (error: UpstreamError) => ApiError;
  unavailable?: (error: ProviderUnavailableError) => ApiError;
}

/**
 * The one mapping of a provider failure to HTTP: a failing provider is 502 `upstream_error`, a
 * missing one 503 `provider_unavailable`. Anything else is returned unchanged for the caller to throw.
 */
export function providerFailure(error: UpstreamError | ProviderUnavailableError, overrides?: ProviderFailureOverrides): ApiError;
export function providerFailure(error: unknown, overrides?: ProviderFailureOverrides): unknown;
export function providerFailure(error: unknown, overrides: ProviderFailureOverrides = {}): unknown {
  if (error instanceof UpstreamError) return overrides.upstream ? overrides.upstream(error) : upstreamFailed(error.message);
  if (error instanceof ProviderUnavailableError) return overrides.unavailable ? overrides.unavailable(error) : providerUnavailable(error.message);
  return error;
}

/** The `code` of a chat stream's `error` event: the contract's own list, narrower than `ErrorCode`. */
export type StreamErrorCode = components["schemas"]["ChatStreamErrorCode"];
/** The data of a chat stream's `error` event. */
export type StreamError = components["schemas"]["ChatStreamError"];

// A record rather than a list: a code added to the contract fails to compile here until it is listed.
const STREAM_ERROR_CODES: Record<StreamErrorCode, true> = { upstream_error: true, internal_error: true, generation_lost: true, service_unavailable: true, reply_flagged: true };
const isStreamErrorCode = (code: string): code is StreamErrorCode => Object.hasOwn(STREAM_ERROR_CODES, code);

/** A failed reply as the `error` event of its stream; a code the stream does not declare is `internal_error`. */
export function streamError(error: ApiError): StreamError {
  return { code: isStreamErrorCode(error.code) ? error.code : "internal_error", message: error.message };
}
