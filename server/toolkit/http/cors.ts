import cors from "cors";
import type { RequestHandler } from "express";
import { forbidden } from "./error-catalogue.ts";

/**
 * Request headers a page may send: those of the service's SDK and contract, and those the `openai`
 * package (7.x, `dangerouslyAllowBrowser`) and Vercel's `ai` SDK send to `/openai/v1`. A preflight
 * asking for any other is answered without it, and the browser refuses the request.
 */
export const CORS_ALLOWED_HEADERS = [
  "Authorization",
  "Content-Type",
  "X-API-Key",
  "Idempotency-Key",
  "Last-Event-ID",
  "X-Persona-Conversation-Id",
  "X-Request-Id",
  "OpenAI-Organization",
  "OpenAI-Project",
  "OpenAI-Beta",
  "X-Stainless-Arch",
  "X-Stainless-Lang",
  "X-Stainless-OS",
  "X-Stainless-Package-Version",
  "X-Stainless-Runtime",
  "X-Stainless-Runtime-Version",
  "X-Stainless-Retry-Count",
  "X-Stainless-Timeout",
  "X-Stainless-Helper-Method",
  "User-Agent",
] as const;

/**
 * Answer headers a page may read beyond the CORS-safelisted ones: what the SDK reads (the request
 * id, the rate-limit state, `Retry-After`), what the `openai` package reads (`X-Request-Id`,
 * `X-Should-Retry`), and what a page needs of a download or a creation (`Content-Disposition`, `Location`).
 */
export const CORS_EXPOSED_HEADERS = [
  "X-Request-Id",
  "X-RateLimit-Limit",
  "X-RateLimit-Remaining",
  "X-RateLimit-Reset",
  "Retry-After",
  "X-Should-Retry",
  "Content-Disposition",
  "Location",
] as const;

/** The methods of the contract's operations. */
export const CORS_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;

/** How long a browser may keep a preflight's answer (Chromium keeps it at most 2 hours). */
export const CORS_MAX_AGE_SECONDS = 600;

/**
 * CORS for the exact `origins` of CORS_ORIGINS (ADR 0306), with the `cors` package, before anything
 * else of a request is done (no rate limit is counted for a preflight). An allowed origin's
 * preflight is answered 204 with the methods, headers and max-age above; its requests carry
 * `Access-Control-Allow-Origin` (its own origin, never `*`) and the exposed headers. Credentials
 * mode is off: the API takes bearer tokens and API keys, never cookies, so
 * `Access-Control-Allow-Credentials` is not sent. Any other origin gets no CORS header at all, and
 * its preflight is refused 403 `forbidden` (the browser then refuses the request it announced);
 * its other requests are served as for any client without CORS. Every answer varies by `Origin`.
 * Undefined when no origin is listed: the stage is left out.
 */
export function crossOrigin(origins: readonly string[]): RequestHandler | undefined {
  if (!origins.length) return undefined;
  const allowed = new Set(origins);
  const answer = cors({
    origin: [...allowed],
    methods: [...CORS_METHODS],
    allowedHeaders: [...CORS_ALLOWED_HEADERS],
    exposedHeaders: [...CORS_EXPOSED_HEADERS],
    credentials: false,
    maxAge: CORS_MAX_AGE_SECONDS,
    optionsSuccessStatus: 204,
  });
  return (req, res, next) => {
    const origin = req.headers.origin;
    if (origin !== undefined && allowed.has(origin)) return answer(req, res, next);
    // A cache must not give an allowed origin the answer another origin got, or the reverse.
    res.vary("Origin");
    if (req.method === "OPTIONS" && origin !== undefined && req.headers["access-control-request-method"] !== undefined) {
      return next(forbidden(`The origin ${JSON.stringify(origin)} may not call this API from a browser: it is not in the service's CORS_ORIGINS`));
    }
    next();
  };
}
