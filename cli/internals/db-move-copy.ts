import { copiedColumns, type Queryable, type Table } from "./db-move-catalog.ts";

// The rows of one table from the embedded database into PostgreSQL, in batches: read as each
// column's text (its type's output function, what COPY's text format carries), written back
// through a cast to the column's type (its input function), so every type the schema uses
// (vector, tsvector, jsonb, arrays, bytea, timestamps) arrives exactly as it was, with no
// per-type code here. A batch is one INSERT … SELECT FROM unnest() of one text array per column.

/** Rows per batch: large rows (documents, 1536-dimension vectors) stay within a few megabytes. */
const BATCH = 500;

/**
 * Copies `table`'s rows from `source` (inside its read transaction, which the caller opened) into
 * `target` (inside the caller's write transaction); answers how many. Identity columns keep their
 * values (OVERRIDING SYSTEM VALUE); generated ones are computed by the target.
 */
export async function copyTable(source: Queryable, target: Queryable, table: Table, cursor: string): Promise<number> {
  const columns = copiedColumns(table);
  const aliases = columns.map((_, i) => `c${i}`);
  await source.query(`DECLARE ${cursor} NO SCROLL CURSOR FOR SELECT ${columns.map((c, i) => `${c.name}::text AS ${aliases[i]}`).join(", ")} FROM ${table.qualified}`);
  const insert =
    `INSERT INTO ${table.qualified} (${columns.map((c) => c.name).join(", ")}) OVERRIDING SYSTEM VALUE ` +
    `SELECT ${columns.map((c, i) => `${aliases[i]}::${c.type}`).join(", ")} FROM unnest(${columns.map((_, i) => `$${i + 1}::text[]`).join(", ")}) AS u(${aliases.join(", ")})`;
  let copied = 0;
  try {
    for (;;) {
      const { rows } = await source.query<Record<string, string | null>>(`FETCH ${BATCH} FROM ${cursor}`);
      if (rows.length === 0) break;
      await target.query(insert, aliases.map((alias) => rows.map((row) => row[alias] ?? null)));
      copied += rows.length;
    }
  } finally {
    await source.query(`CLOSE ${cursor}`);
  }
  return copied;
}
