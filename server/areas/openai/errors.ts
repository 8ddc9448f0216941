import type { ErrorRequestHandler } from "express";
import type { components } from "../../../generated/openapi.d.ts";
import { toApiError } from "../../toolkit/http/error-handler.ts";
import { invalidRequest, notFoundExplained } from "../../toolkit/http/error-catalogue.ts";
import type { ApiError } from "../../toolkit/http/errors.ts";

export type OpenAIErrorBody = components["schemas"]["OpenAIErrorEnvelope"];

/**
 * An error of this prefix that OpenAI clients should read as one of theirs: `code` and `param` go
 * into the OpenAI body (the service's own codes are a closed list that OpenAI's do not fit).
 */
export function openaiRefusal(status: 400 | 404, code: string, message: string, param: string | null): ApiError {
  const details = { openai_code: code, param };
  return status === 400 ? invalidRequest(message, details) : notFoundExplained(message, details);
}

export const modelNotFound = (model: string) =>
  openaiRefusal(404, "model_not_found", `The model \`${model}\` does not exist or you do not have access to it.`, "model");

// OpenAI's `type` per status; clients such as the `openai` SDK pick their exception class by status.
const TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "invalid_request_error",
  403: "permission_error",
  404: "invalid_request_error",
  413: "invalid_request_error",
  415: "invalid_request_error",
  429: "rate_limit_error",
  500: "server_error",
};

const CODES: Partial<Record<string, string>> = {
  unauthorized: "invalid_api_key",
  rate_limited: "rate_limit_exceeded",
};

/** `/body/messages/0/role` as OpenAI names the field: `messages[0].role`. */
function paramOf(path: string | undefined): string | null {
  if (!path) return null;
  const field = path.replace(/^\/(body|headers|query|path)\/?/, "");
  if (!field) return null;
  return field.split("/").reduce((name, part) => (/^\d+$/.test(part) ? `${name}[${part}]` : name ? `${name}.${part}` : part), "");
}

/**
 * The answer to `error` in OpenAI's shape. A used-up plan quota (402 elsewhere) is OpenAI's 429
 * `insufficient_quota`, with `X-Should-Retry: false` so that the official SDKs do not retry it.
 */
export function openaiError(error: ApiError): { status: number; body: OpenAIErrorBody; headers: Record<string, string> } {
  const details = (error.details ?? {}) as { openai_code?: string; param?: string | null; errors?: { path: string }[] };
  const headers = { ...error.headers };
  if (error.code === "plan_limit_exceeded") {
    headers["X-Should-Retry"] = "false";
    return { status: 429, headers, body: { error: { message: error.message, type: "insufficient_quota", param: null, code: "insufficient_quota" } } };
  }
  const param = details.param !== undefined ? details.param : paramOf(details.errors?.[0]?.path);
  const code = details.openai_code ?? CODES[error.code] ?? error.code;
  const type = TYPES[error.status] ?? "api_error";
  return { status: error.status, headers, body: { error: { message: error.message, type, param, code } } };
}

/** The error middleware of `/openai/v1`, before the service's own: the same errors, in OpenAI's body. */
export const openaiErrorHandler: ErrorRequestHandler = (error, req, res, _next) => {
  const apiError = toApiError(error);
  if (apiError.status === 500) req.log?.error({ err: error }, "request failed");
  if (res.headersSent) {
    res.end();
    return;
  }
  const { status, body, headers } = openaiError(apiError);
  res.set(headers);
  if (status === 401) res.set("WWW-Authenticate", 'Bearer realm="persona"');
  res.status(status).json(body);
};
