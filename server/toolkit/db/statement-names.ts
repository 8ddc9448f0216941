import type pg from "pg";

const stripped = new WeakSet<pg.ClientBase>();

/**
 * Makes `client` send every statement unnamed, whatever its caller asked for: behind a pooler in
 * transaction mode without protocol-level prepared statements (PgBouncer before 1.21), a statement
 * prepared in one transaction is unknown to the server connection the next one gets, and the query
 * fails with "prepared statement … does not exist". Done on the connection rather than at the call
 * sites (server/toolkit/db/prepared.ts, rate-limiter-flexible, graphile-worker) so that no library's
 * named statement can slip past it. An unnamed statement is parsed and planned on every run: the
 * cost is measured by bench/pooler.ts (ADR 0341).
 */
export function sendUnnamed(client: pg.ClientBase): void {
  if (stripped.has(client)) return;
  stripped.add(client);
  // The class's query is looked up at each call, so that what wraps it later (tracing, tests'
  // counters) still sees every statement, as sent.
  const own = Object.getPrototypeOf(client) as { query: (...args: unknown[]) => unknown };
  (client as { query: (...args: unknown[]) => unknown }).query = function unnamedQuery(this: unknown, config: unknown, ...rest: unknown[]) {
    return own.query.call(this, isNamed(config) ? { ...config, name: undefined } : config, ...rest);
  };
}

// A submittable (pg-cursor, pg-query-stream) builds its own protocol messages: left as it is.
const isNamed = (config: unknown): config is pg.QueryConfig =>
  typeof config === "object" && config !== null && typeof (config as pg.QueryConfig).name === "string" && typeof (config as { submit?: unknown }).submit !== "function";
