import { createHash } from "node:crypto";
import { copiedColumns, type Queryable, type Table } from "./db-move-catalog.ts";

// How `persona db move` checks its copy, table by table: the row count and a hash of the rows, each
// row as PostgreSQL's text of its copied columns. The hash is a sum of the rows' md5s (two 64-bit
// halves, summed as numeric), so it needs neither an order of the rows, which would follow each
// database's collation, nor the whole table in one string; it is computed in the database, so no
// row crosses the wire to be checked. Generated columns are left out: the target computes them.

/**
 * What every session that reads or writes rows as text sets, in its transaction (SET LOCAL): the
 * text of a timestamp, an interval, a float or bytea then reads the same on both sides, whatever
 * the servers' defaults.
 */
export const TEXT_SETTINGS = [
  "SET LOCAL TimeZone = 'UTC'",
  "SET LOCAL DateStyle = 'ISO, YMD'",
  "SET LOCAL IntervalStyle = 'postgres'",
  "SET LOCAL extra_float_digits = 1",
  "SET LOCAL bytea_output = 'hex'",
];

export interface Digest {
  rows: number;
  hash: string;
}

export async function tableDigest(db: Queryable, table: Table): Promise<Digest> {
  const row = `ROW(${copiedColumns(table).map((c) => c.name).join(", ")})::text`;
  const half = (from: number) => `coalesce(sum(('x' || substr(h, ${from}, 16))::bit(64)::bigint::numeric), 0)::text`;
  const result = await db.query<{ rows: number; a: string; b: string }>(
    `SELECT count(*)::int AS rows, ${half(1)} AS a, ${half(17)} AS b FROM (SELECT md5(${row}) AS h FROM ${table.qualified}) t`,
  );
  const { rows, a, b } = result.rows[0]!;
  return { rows: Number(rows), hash: createHash("sha256").update(`${a}:${b}`).digest("hex").slice(0, 16) };
}
