/**
 * Whether a failure means the database cannot be reached right now (stopped, restarting, network
 * gone) rather than a fault of the request or the code: those answer 503 with Retry-After so that
 * clients back off and retry, and the service recovers by itself when the database is back.
 */

// SQLSTATE class 08 (connection exception), 57P01-57P03 (shut down, crashed, not accepting yet), and
// 25006 (read-only transaction): a write reached a standby, which happens when a failover's proxy
// routes to the node being promoted a moment before it accepts writes (docs/operations.md, Failover).
const SQLSTATE = /^(08|57P0[123]|25006)/;
const SOCKET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTCONN"]);
// pg and knex report a lost or unobtainable connection in their messages only.
const MESSAGES = [
  "Connection terminated",
  "Client has encountered a connection error",
  "Client was closed and is not queryable",
  "Timeout acquiring a connection",
  "the database system is",
];

export const DATABASE_RETRY_AFTER_SECONDS = 2;

export function isDatabaseUnavailable(error: unknown): boolean {
  for (let current = error, depth = 0; current && typeof current === "object" && depth < 4; depth++) {
    const e = current as { code?: unknown; message?: unknown; name?: unknown; errors?: unknown[]; cause?: unknown };
    if (typeof e.code === "string" && (SOCKET_CODES.has(e.code) || (e.code.length === 5 && SQLSTATE.test(e.code)))) return true;
    if (e.name === "KnexTimeoutError") return true;
    if (typeof e.message === "string" && MESSAGES.some((text) => (e.message as string).includes(text))) return true;
    if (Array.isArray(e.errors) && e.errors.some((inner) => isDatabaseUnavailable(inner))) return true;
    current = e.cause;
  }
  return false;
}
