import { createHash } from "node:crypto";

const names = new Map<string, string>();

/**
 * pg's query options that prepare `sql` once per connection and reuse it: a named statement, whose
 * name is a digest of its whole text (pg refuses one name for two texts). For large statements on
 * the hot path, whose parsing and planning cost PostgreSQL more than running them (the chat turn:
 * about 1.4 of its 2.5 ms). Only on PostgreSQL: the embedded database is one session shared by
 * every connection, where two connections preparing one name collide; there it answers no options,
 * and `text` (which may compile SQL) is not called.
 */
export function preparedOn(kind: "embedded" | "postgres", text: () => string): { name?: string } {
  if (kind !== "postgres") return {};
  const sql = text();
  let name = names.get(sql);
  if (name === undefined) {
    name = `p_${createHash("sha256").update(sql).digest("base64url").slice(0, 24)}`;
    names.set(sql, name);
  }
  return { name };
}

/** The knex instances on a server where a statement may be named (PostgreSQL; see preparedOn). */
const preparing = new WeakSet<object>();

/** Marks `knex` (on PostgreSQL, not the embedded database) as one whose statements `preparedFor` may name. */
export function preparesStatements(knex: object): void {
  preparing.add(knex);
}

/**
 * `preparedOn` for a statement run on `knex`: named where `knex` was marked by `preparesStatements`.
 * For statements whose text is the same on every run (rows passed as one JSON value, not as a
 * VALUES list as long as the rows: server/toolkit/db/rows.ts `jsonRows`), so that the connection
 * keeps one prepared statement per shape, not one per row count.
 */
export function preparedFor(knex: object, sql: string): { name?: string } {
  return preparedOn(preparing.has(knex) ? "postgres" : "embedded", () => sql);
}
