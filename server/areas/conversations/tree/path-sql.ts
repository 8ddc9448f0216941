/**
 * SQL pieces for walking a conversation tree. A conversation's messages form a tree by
 * `parent_id`; what the API shows, searches and sends to the model is one path of it: from a leaf
 * (usually the conversation's `active_message_id`) up to the first message.
 */

/**
 * A recursive CTE named `name` holding the path that ends at the message `leafSql` evaluates to
 * (one row per message, any order; `depth` orders it). `columns` are plain message columns. With
 * `floorSql` (evaluated on the leaf as `m`, e.g. `m.depth - 50`), the walk stops above that depth,
 * so a long conversation costs what its newest part costs; the rows then carry `path_floor` too.
 *
 * Each step reads the parent by its primary key through a LATERAL subquery with LIMIT 1, which the
 * planner cannot turn into a join: as a join it planned a hash join over a sequential scan of all
 * messages whenever its statistics called the table small (a new install, a fresh database),
 * one scan per step, and a 240-message path took 9 ms instead of 0.4
 * (docs/adr/0123-the-path-walk-reads-each-parent-by-primary-key.md).
 */
export function pathCte(name: string, columns: readonly string[], leafSql: string, floorSql?: string): string {
  return `${name} AS (${pathQuery(name, columns, leafSql, floorSql)})`;
}

/** The body of `pathCte`, for builders that name the CTE themselves. */
export function pathQuery(name: string, columns: readonly string[], leafSql: string, floorSql?: string): string {
  const cols = columns.map((column) => `m.${column}`).join(", ");
  if (floorSql === undefined) {
    return `SELECT ${cols} FROM messages m WHERE m.id = ${leafSql}
    UNION ALL
    SELECT ${cols} FROM ${name} CROSS JOIN LATERAL (${parentOf(name, columns)} LIMIT 1) m`;
  }
  return `SELECT ${cols}, (${floorSql}) AS path_floor FROM messages m WHERE m.id = ${leafSql}
    UNION ALL
    SELECT ${cols}, ${name}.path_floor FROM ${name} CROSS JOIN LATERAL (${parentOf(name, columns)} AND m.depth > ${name}.path_floor LIMIT 1) m`;
}

/** The parent of the path's row `name` as `m`, by primary key (for a LATERAL step; see `pathCte`). */
export function parentOf(name: string, columns: readonly string[]): string {
  return `SELECT ${columns.map((column) => `m.${column}`).join(", ")} FROM messages m WHERE m.id = ${name}.parent_id`;
}

/**
 * `alternative_index` and `alternative_count` of the message under `alias`: its siblings of the same
 * role (regenerated replies of one turn, edited versions of one user message), oldest first.
 */
export function alternativeColumns(alias: string): string {
  const siblings = `FROM messages s WHERE s.conversation_id = ${alias}.conversation_id AND s.role = ${alias}.role
    AND (s.parent_id = ${alias}.parent_id OR (s.parent_id IS NULL AND ${alias}.parent_id IS NULL))`;
  return `(SELECT count(*) ${siblings} AND (s.created_at, s.id) < (${alias}.created_at, ${alias}.id))::int AS alternative_index,
    (SELECT count(*) ${siblings})::int AS alternative_count`;
}
