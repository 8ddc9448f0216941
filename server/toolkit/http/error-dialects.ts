import { type ApiError, errorBody } from "./errors.ts";

/** An error answer as it goes on the wire. */
export interface ErrorAnswer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/**
 * How the answers under a path prefix spell an error, when not in the service's own envelope: the
 * OpenAI-compatible door answers in OpenAI's shape. The toolkit knows no area; the app hands the
 * dialects to the stages that answer below Express's error handlers (the listener's refusals of
 * malformed requests, a body that never arrives), so that a client of that prefix reads every
 * refusal in the one shape it knows.
 */
export interface ErrorDialect {
  /** A path prefix without a trailing slash, e.g. `/openai/v1`. */
  prefix: string;
  answer: (error: ApiError) => ErrorAnswer;
}

/** `path` (a request target: path and query) is `prefix` or lies below it. */
export function isUnder(path: string, prefix: string): boolean {
  if (!path.startsWith(prefix)) return false;
  const next = path[prefix.length];
  return next === undefined || next === "/" || next === "?";
}

/** The answer to `error` for a request to `path` (undefined when the path is not known): its dialect's, else the envelope. */
export function errorAnswer(error: ApiError, path: string | undefined, dialects: readonly ErrorDialect[]): ErrorAnswer {
  if (path !== undefined) {
    for (const dialect of dialects) if (isUnder(path, dialect.prefix)) return dialect.answer(error);
  }
  return { status: error.status, headers: error.headers, body: errorBody(error) };
}
