import type { Knex } from "knex";
import { runStatement } from "./positional.ts";
import { preparedFor } from "./prepared.ts";

/**
 * Work one area's statement carries for another (issue 37: a streamed reply stores its messages,
 * its generation's events and state, and their announcement in one statement, not one each): common
 * table expressions run with the statement, expressions its final `SELECT` evaluates (a CTE that
 * only reads, such as `pg_notify`, runs only when referenced), and what to do once it committed.
 * Everything in it commits with the carrying statement or not at all.
 */
export interface StatementPart {
  /** `name AS (...)` entries of the statement's `WITH`, each with its bindings in order. */
  ctes?: { sql: string; bindings: readonly Knex.Value[] }[];
  /** Expressions of the final `SELECT`, each with its bindings in order. */
  selects?: { sql: string; bindings: readonly Knex.Value[] }[];
  /** Runs after the statement committed (an in-process notification). */
  afterCommit?: () => Promise<void> | void;
  /** Runs when the statement failed: nothing of the part was stored. */
  onFailure?: (error: unknown) => void;
}

/** The parts' CTEs (each followed by a comma) and final-select expressions (each preceded by one), with their bindings. */
export function joinParts(parts: readonly StatementPart[]): { ctes: string; cteBindings: Knex.Value[]; selects: string; selectBindings: Knex.Value[] } {
  const ctes = parts.flatMap((part) => part.ctes ?? []);
  const selects = parts.flatMap((part) => part.selects ?? []);
  return {
    ctes: ctes.map((cte) => `${cte.sql},\n`).join(""),
    cteBindings: ctes.flatMap((cte) => [...cte.bindings]),
    selects: selects.map((select) => `, ${select.sql}`).join(""),
    selectBindings: selects.flatMap((select) => [...select.bindings]),
  };
}

/**
 * Runs the statement `build` makes around the parts (its own SQL with the parts' CTEs before its own
 * and their expressions in its final `SELECT`; its bindings in the order of its text), then the
 * parts' after-commit work; when it fails, the parts' failure work, and the error goes on.
 */
export async function runCarrying(
  knex: Knex,
  parts: readonly StatementPart[],
  build: (carried: ReturnType<typeof joinParts>) => { sql: string; bindings: readonly Knex.Value[] },
): Promise<void> {
  const { sql, bindings } = build(joinParts(parts));
  try {
    // The carrying statements' texts do not vary with their row counts (rows.ts jsonRows): one
    // prepared statement per combination of parts, parsed and planned once per connection.
    await runStatement(knex, sql, bindings, preparedFor(knex, sql));
  } catch (error) {
    for (const part of parts) part.onFailure?.(error);
    throw error;
  }
  for (const part of parts) await part.afterCommit?.();
}
