import type { Knex } from "knex";

/** Rows of `table` whose `column` is one of `values`, ordered by `orderBy` when given. */
export async function rowsWhereIn(
  knex: Knex,
  table: string,
  column: string,
  values: readonly string[],
  orderBy?: string,
): Promise<Record<string, unknown>[]> {
  if (values.length === 0) return [];
  const query = knex(table).whereIn(column, values);
  if (orderBy) query.orderBy(orderBy);
  return query.select("*");
}

/** Every table of the current schema. */
export async function tablesOfSchema(knex: Knex): Promise<string[]> {
  const result = await knex.raw<{ rows: { name: string }[] }>(
    `SELECT c.relname AS name FROM pg_class c
      WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
      ORDER BY 1`,
  );
  return result.rows.map((row) => row.name);
}

/**
 * The tables whose rows belong to a user: every table with a foreign key onto `users`, and every
 * table with a foreign key onto one of those, to any depth (messages through conversations,
 * chunks through documents...), read from the catalog rather than from a list someone must keep.
 */
export async function userOwnedTables(knex: Knex): Promise<string[]> {
  const result = await knex.raw<{ rows: { name: string }[] }>(
    `WITH RECURSIVE owned(oid) AS (
       SELECT 'users'::regclass::oid
       UNION
       SELECT c.conrelid FROM pg_constraint c JOIN owned o ON c.confrelid = o.oid
        WHERE c.contype = 'f'
     )
     SELECT relname AS name FROM pg_class WHERE oid IN (SELECT oid FROM owned) AND relname <> 'users' ORDER BY 1`,
  );
  return result.rows.map((row) => row.name);
}

/**
 * Inserts `row`, or finds the row that already holds its unique `key` columns: the idempotent
 * "create" of follows and likes, one statement in the common case and never a unique violation.
 */
export async function insertOrFind<Row extends object>(knex: Knex, table: string, row: Row, key: readonly (keyof Row & string)[]): Promise<Row> {
  const [inserted] = await knex(table).insert(row).onConflict([...key]).ignore().returning("*");
  if (inserted) return inserted as Row;
  return knex(table)
    .where(Object.fromEntries(key.map((column) => [column, row[column]])))
    .first() as Promise<Row>;
}

/**
 * `rows` as the column list and VALUES of a raw INSERT, with `?` bindings: the columns any row has,
 * and DEFAULT where a row has none (or undefined), as knex's builder inserts them. For statements on
 * the hot path: the builder compiled a multi-CTE insert in about 0.3 ms on every call.
 */
export function insertValues(rows: readonly Record<string, unknown>[]): { columns: string; values: string; bindings: Knex.Value[] } {
  const names = [...new Set(rows.flatMap((row) => Object.keys(row)))].sort();
  const bindings: Knex.Value[] = [];
  const values = rows.map((row) => `(${names.map((name) => (row[name] === undefined ? "DEFAULT" : (bindings.push(row[name] as Knex.Value), "?"))).join(", ")})`).join(", ");
  return { columns: names.map((name) => `"${name}"`).join(", "), values, bindings };
}

/**
 * `rows` as the SELECT of a raw `INSERT INTO table (columns)`: one JSON binding read by
 * `json_populate_recordset`, so that the text is the same whatever the number of rows and the
 * statement can be prepared once (prepared.ts `preparedFor`). Values are given as they are stored
 * (jsonb columns as objects, not as JSON text); a column a row lacks is NULL, not its default, so
 * `columns` must name only columns every row has.
 */
export function jsonRows(table: string, columns: readonly string[], rows: readonly Record<string, unknown>[]): { columns: string; select: string; bindings: Knex.Value[] } {
  const list = columns.map((name) => `"${name}"`).join(", ");
  return { columns: list, select: `SELECT ${list} FROM json_populate_recordset(NULL::${table}, ?::json)`, bindings: [JSON.stringify(rows)] };
}

/** Whether `error` is PostgreSQL's foreign-key violation of the constraint named (a referenced row deleted meanwhile). */
export const isForeignKeyViolation = (error: unknown, constraint: string) =>
  (error as { code?: string }).code === "23503" && (error as { constraint?: string }).constraint === constraint;

/** Whether `error` is PostgreSQL's unique violation (of the index named, when one is). */
export const isUniqueViolation = (error: unknown, index?: string) =>
  (error as { code?: string }).code === "23505" && (!index || (error as { constraint?: string }).constraint === index);
