import { DEFAULT_PROFILE } from "./settings.ts";

/**
 * Exit codes of the `persona` command line, so that scripts can tell "fix your command" from
 * "log in again" from "no such thing" without parsing messages.
 */
export const EXIT = {
  ok: 0,
  error: 1,
  usage: 2,
  auth: 3,
  notFound: 4,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error the CLI itself raises (bad input, not logged in); its message is shown as is. */
export class CliError extends Error {
  override name = "CliError";
  readonly exitCode: ExitCode;
  readonly code: string | undefined;

  constructor(message: string, exitCode: ExitCode = EXIT.error, code?: string) {
    super(message);
    this.exitCode = exitCode;
    this.code = code;
  }
}

export const usageError = (message: string) => new CliError(message, EXIT.usage, "usage");
export const notLoggedIn = (baseUrl: string, profile = DEFAULT_PROFILE) =>
  profile === DEFAULT_PROFILE
    ? new CliError(`not logged in to ${baseUrl}: run \`persona login\` or pass --api-key`, EXIT.auth, "not_logged_in")
    : new CliError(`not logged in to ${baseUrl} in profile ${profile}: run \`persona --profile ${profile} login\` or pass --api-key`, EXIT.auth, "not_logged_in");

/**
 * The shape shared by the SDK's PersonaError and the server's ApiError (admin commands that use
 * server internals throw the latter); matched structurally so one mapping serves both. The SDK's
 * errors without a status (connection, timeout, a stream's error event) carry `requestId`.
 */
interface ApiStyleError extends Error {
  status: number | undefined;
  code: string;
  message: string;
  requestId?: string | undefined;
  details?: unknown;
}

function isApiStyleError(error: unknown): error is ApiStyleError {
  if (!(error instanceof Error)) return false;
  const candidate = error as Partial<ApiStyleError>;
  return typeof candidate.code === "string" && (typeof candidate.status === "number" || "requestId" in candidate);
}

const UNREACHABLE = new Set(["connection_error", "timeout"]);

function exitCodeForStatus(status: number): ExitCode {
  if (status === 401 || status === 403) return EXIT.auth;
  if (status === 404) return EXIT.notFound;
  return EXIT.error;
}

/** Field errors of a 400 (`details.errors`), which say what to fix far better than the summary. */
function fieldErrors(details: unknown): string {
  const errors = (details as { errors?: { path?: string; message?: string }[] } | undefined)?.errors;
  if (!Array.isArray(errors) || errors.length === 0) return "";
  return `: ${errors.map((e) => `${e.path ?? "?"} ${e.message ?? ""}`.trim()).join("; ")}`;
}

/** A network failure of fetch: undici wraps the real reason (ECONNREFUSED, ENOTFOUND) in `cause`. */
function networkReason(error: Error): string | undefined {
  if (error.name === "TypeError" && error.message === "fetch failed") {
    const cause = error.cause as { code?: string; message?: string } | undefined;
    return cause?.code ?? cause?.message ?? "connection failed";
  }
  const code = (error as { code?: unknown }).code;
  if (code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "ECONNRESET") return String(code);
  return undefined;
}

/** A file given on the command line that cannot be read, named without Node's errno prefix. */
function fileProblem(error: Error): string | undefined {
  const { code, path } = error as NodeJS.ErrnoException;
  const reason = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "a directory, not a file" : code === "EACCES" ? "permission denied" : undefined;
  return reason && typeof path === "string" ? `${path}: ${reason}` : undefined;
}

/** What the CLI says of an error that reaches its top: a line for people, fields for `--json`. */
export interface DescribedError {
  message: string;
  exitCode: ExitCode;
  /** The server's error code, or the CLI's own (`usage`, `not_logged_in`, `unreachable`, `error`). */
  code: string;
  status?: number;
  requestId?: string;
  details?: unknown;
}

/** The one-line message and exit code for any error that reaches the top of the CLI. */
export function describeError(error: unknown, baseUrl?: string): DescribedError {
  if (error instanceof CliError) return { message: error.message, exitCode: error.exitCode, code: error.code ?? "error" };
  if (isApiStyleError(error) && UNREACHABLE.has(error.code)) {
    const cause = error.cause instanceof Error ? networkReason(error.cause) ?? error.cause.message : undefined;
    return { message: `cannot reach ${baseUrl ?? "the server"} (${cause ?? error.message})`, exitCode: EXIT.error, code: "unreachable" };
  }
  if (isApiStyleError(error)) {
    const tail = [error.code, error.requestId ? `request ${error.requestId}` : undefined].filter(Boolean).join(", ");
    return {
      message: `${error.message}${fieldErrors(error.details)} (${tail})`,
      exitCode: error.status ? exitCodeForStatus(error.status) : EXIT.error,
      code: error.code,
      ...(error.status ? { status: error.status } : {}),
      ...(error.requestId ? { requestId: error.requestId } : {}),
      ...(error.details !== undefined ? { details: error.details } : {}),
    };
  }
  if (error instanceof Error) {
    const reason = networkReason(error);
    if (reason) return { message: `cannot reach ${baseUrl ?? "the server"} (${reason})`, exitCode: EXIT.error, code: "unreachable" };
    const file = fileProblem(error);
    if (file) return { message: file, exitCode: EXIT.error, code: "file" };
    return { message: error.message, exitCode: EXIT.error, code: "error" };
  }
  return { message: String(error), exitCode: EXIT.error, code: "error" };
}

/** The error as one JSON line, for `--json` callers that parse stderr as well as stdout. */
export function errorJson(described: DescribedError): string {
  const { message, exitCode, code, status, requestId, details } = described;
  return JSON.stringify({ error: { code, message, exit_code: exitCode, ...(status ? { status } : {}), ...(requestId ? { request_id: requestId } : {}), ...(details !== undefined ? { details } : {}) } });
}
