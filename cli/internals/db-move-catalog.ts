// What `persona db move` reads from a database's catalog, the same queries on both sides (PGlite
// in process, PostgreSQL through pg): the tables of every schema the service and graphile-worker
// own, their columns, foreign keys and sequences. Extensions' own objects (pgvector, pg_trgm) are
// left to the extensions.

/** A connection either side: PGlite and pg answer `{ rows }` alike. */
export interface Queryable {
  query<T>(sql: string, params?: unknown[]): Promise<{ rows: T[] }>;
}

export interface Column {
  name: string;
  /** `format_type` of the column: what a text value is cast to on the way in. */
  type: string;
  /** Computed by the target itself (GENERATED ALWAYS AS … STORED): neither copied nor hashed. */
  generated: boolean;
}

export interface Table {
  /** schema.table, quoted as SQL needs it. */
  qualified: string;
  columns: Column[];
}

export interface ForeignKey {
  table: string;
  name: string;
  definition: string;
}

/** Schemas that are PostgreSQL's own, not the service's. */
const SYSTEM_SCHEMAS = "n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp\\_%'";
/** Objects an extension created (its own tables or sequences), which CREATE EXTENSION makes on the target. */
const NOT_EXTENSIONS = "NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')";

/** Every table the service's schemas hold, by qualified name, with its columns in order. */
export async function readTables(db: Queryable): Promise<Table[]> {
  const { rows } = await db.query<{ qualified: string; column: string; type: string; generated: boolean }>(
    `SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS qualified, quote_ident(a.attname) AS column,
            format_type(a.atttypid, a.atttypmod) AS type, a.attgenerated <> '' AS generated
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid
      WHERE c.relkind = 'r' AND ${SYSTEM_SCHEMAS} AND ${NOT_EXTENSIONS} AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY 1, a.attnum`,
  );
  const tables = new Map<string, Table>();
  for (const row of rows) {
    let table = tables.get(row.qualified);
    if (!table) tables.set(row.qualified, (table = { qualified: row.qualified, columns: [] }));
    table.columns.push({ name: row.column, type: row.type, generated: row.generated });
  }
  return [...tables.values()];
}

/** A database with no table and no sequence of its own (extensions' objects aside). */
export async function userRelations(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT n.nspname || '.' || c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f') AND ${SYSTEM_SCHEMAS} AND ${NOT_EXTENSIONS}
      ORDER BY 1 LIMIT 5`,
  );
  return rows.map((row) => row.name);
}

export async function readForeignKeys(db: Queryable): Promise<ForeignKey[]> {
  const { rows } = await db.query<ForeignKey>(
    `SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS table, quote_ident(k.conname) AS name, pg_get_constraintdef(k.oid) AS definition
       FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE k.contype = 'f' AND ${SYSTEM_SCHEMAS}
      ORDER BY 1, 2`,
  );
  return rows;
}

/** Every sequence of the service's schemas (serial and identity columns' too) and where it stands. */
export async function readSequences(db: Queryable): Promise<{ qualified: string; lastValue: string; isCalled: boolean }[]> {
  const { rows } = await db.query<{ qualified: string }>(
    `SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS qualified FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind = 'S' AND ${SYSTEM_SCHEMAS} AND ${NOT_EXTENSIONS} ORDER BY 1`,
  );
  const sequences = [];
  for (const { qualified } of rows) {
    // The name comes from the catalog, quoted by quote_ident.
    const state = (await db.query<{ last_value: string; is_called: boolean }>(`SELECT last_value::text, is_called FROM ${qualified}`)).rows[0]!;
    sequences.push({ qualified, lastValue: state.last_value, isCalled: state.is_called });
  }
  return sequences;
}

/** The copied (not generated) columns of a table. */
export const copiedColumns = (table: Table) => table.columns.filter((column) => !column.generated);

/** Where two databases' tables differ (names, columns, types), as lines; empty when they match. */
export function shapeDifferences(source: Table[], target: Table[]): string[] {
  const describe = (table: Table) => table.columns.map((c) => `${c.name} ${c.type}${c.generated ? " generated" : ""}`).join(", ");
  const targets = new Map(target.map((table) => [table.qualified, table]));
  const problems: string[] = [];
  for (const table of source) {
    const other = targets.get(table.qualified);
    if (!other) problems.push(`${table.qualified} is not in the target's schema`);
    else if (describe(table) !== describe(other)) problems.push(`${table.qualified} has other columns on the target: (${describe(other)}) instead of (${describe(table)})`);
    targets.delete(table.qualified);
  }
  for (const name of targets.keys()) problems.push(`${name} is on the target but not in the embedded database`);
  return problems;
}
