import type { Knex } from "knex";
import type pg from "pg";
import { timedStatement } from "../metrics/database.ts";

/** Texts converted so far, by their `?` text; bounded, as a statement's text varies with its row count. */
const converted = new Map<string, string>();
const MAX_TEXTS = 2_000;

/**
 * `sql` with knex's `?` placeholders as PostgreSQL's `$1`...`$n`, as knex's PostgreSQL dialect
 * numbers them (`\\?` is a literal `?`); cached by text.
 */
export function positional(sql: string): string {
  let text = converted.get(sql);
  if (text === undefined) {
    // One pass, as knex's dialect does it: the backslashes before a `?` go, and after an odd run of
    // them the `?` is a literal one.
    let n = 0;
    let escapes = 0;
    let out = "";
    for (const char of sql) {
      if (char === "?") out = out.slice(0, out.length - escapes) + (escapes % 2 ? "?" : `$${++n}`);
      else out += char;
      escapes = char === "\\" ? escapes + 1 : 0;
    }
    text = out;
    if (converted.size >= MAX_TEXTS) converted.clear();
    converted.set(sql, text);
  }
  return text;
}

/**
 * Runs one raw statement on a connection of knex's pool, straight through `pg`: the statements of
 * the chat path (issue 37), where knex's raw object, binding formatter and query events cost more
 * CPU than building the statement. The values go to `pg` as knex would pass them. Inside a
 * transaction it is the transaction's `raw`.
 */
export async function runStatement(knex: Knex, sql: string, bindings: readonly Knex.Value[], options: { name?: string } = {}): Promise<pg.QueryResult> {
  if (knex.isTransaction) return (await knex.raw(sql, bindings as Knex.Value[]).options(options)) as pg.QueryResult;
  const client = knex.client as { acquireConnection(): Promise<pg.PoolClient>; releaseConnection(connection: pg.PoolClient): Promise<void> };
  const connection = await client.acquireConnection();
  try {
    return await timedStatement(connection.query({ text: positional(sql), values: bindings as unknown[], ...options }));
  } finally {
    await client.releaseConnection(connection);
  }
}
