import type { Knex } from "knex";

/** A user's own provider connection as stored; the key sealed (secrets.ts). */
export interface ConnectionRow {
  id: string;
  user_id: string;
  name: string;
  base_url: string;
  api_key_encrypted: string | null;
  key_hint: string | null;
  model: string | null;
  context_window: number | null;
  is_default: boolean;
  created_at: Date;
  updated_at: Date;
}

export type ConnectionChanges = Partial<Pick<ConnectionRow, "name" | "base_url" | "api_key_encrypted" | "key_hint" | "model" | "context_window" | "is_default">>;

/** The user's connections, newest first. */
export async function listConnectionsOf(knex: Knex, userId: string): Promise<ConnectionRow[]> {
  return knex("provider_connections").where({ user_id: userId }).orderBy([{ column: "created_at", order: "desc" }, { column: "id", order: "desc" }]);
}

export async function findConnectionOf(knex: Knex, userId: string, id: string): Promise<ConnectionRow | undefined> {
  return knex("provider_connections").where({ user_id: userId, id }).first();
}

export async function countConnectionsOf(knex: Knex, userId: string): Promise<number> {
  const row = await knex("provider_connections").where({ user_id: userId }).count<{ count: string | number }>({ count: "*" }).first();
  return Number(row?.count ?? 0);
}

/**
 * Serialises one user's connection writes (the limit, the one default) for the rest of the
 * transaction: a transaction-scoped advisory lock on the user, which names no other area's table.
 */
export async function lockUser(trx: Knex.Transaction, userId: string): Promise<void> {
  await trx.raw("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", [`provider_connections:${userId}`]);
}

/** The user's default stops being one (a new default is about to be set). */
export async function clearDefault(trx: Knex.Transaction, userId: string, except?: string): Promise<void> {
  const query = trx("provider_connections").where({ user_id: userId, is_default: true });
  if (except) query.whereNot({ id: except });
  await query.update({ is_default: false });
}

export async function insertConnection(trx: Knex.Transaction, row: ConnectionRow): Promise<ConnectionRow> {
  const [inserted] = await trx("provider_connections").insert(row).returning("*");
  return inserted as ConnectionRow;
}

export async function updateConnectionOf(trx: Knex.Transaction, userId: string, id: string, changes: ConnectionChanges & { updated_at: Date }): Promise<ConnectionRow | undefined> {
  const [row] = await trx("provider_connections").where({ user_id: userId, id }).update(changes).returning("*");
  return row as ConnectionRow | undefined;
}

export async function deleteConnectionOf(knex: Knex, userId: string, id: string): Promise<boolean> {
  return (await knex("provider_connections").where({ user_id: userId, id }).delete()) > 0;
}

/** What a reply needs of the connection it runs on (`REPLY_CONNECTION_CTES`). */
export interface ReplyConnectionRow {
  id: string;
  name: string;
  base_url: string;
  api_key_encrypted: string | null;
  model: string | null;
  context_window: number | null;
  /** Text when read as JSON by another statement. */
  updated_at: string | Date;
}

/**
 * The connection a reply of the user runs on, as two CTEs for a statement of the chat path that
 * has the persona as CTE `p` (with its `provider_connection_id`): `k`, the persona's connection when
 * it is the replying user's own (a persona names only its owner's connections), else the user's
 * default, else none; and `kx`, whether the reply is exempt from the monthly quota. Bindings:
 * `replyConnectionBindings`. The text is fixed, so the statement keeps one prepared form.
 */
export const REPLY_CONNECTION_CTES = `k AS (
       SELECT kc.id, kc.name, kc.base_url, kc.api_key_encrypted, kc.model, kc.context_window, kc.updated_at
         FROM provider_connections kc
        WHERE ?::boolean AND kc.user_id = ?::uuid
          AND (kc.id = (SELECT provider_connection_id FROM p) OR kc.is_default)
        ORDER BY (kc.id = (SELECT provider_connection_id FROM p)) IS TRUE DESC LIMIT 1),
     kx AS (SELECT ?::boolean AND EXISTS (SELECT 1 FROM k) AS exempt)`;

/** The select list reading the two CTEs: `connection` (a `ReplyConnectionRow` or null) and `quota_exempt`. */
export const REPLY_CONNECTION_SELECT = `(SELECT row_to_json(k) FROM k) AS connection,
       (SELECT exempt FROM kx) AS quota_exempt`;

/** The reservation's condition: no message is counted for a reply on the user's own key when the operator exempts them. */
export const QUOTA_NOT_EXEMPT = "NOT (SELECT exempt FROM kx)";

/** The connection a studio test chat runs on: the persona's when it is the user's, else the user's default. */
export async function replyConnectionOf(knex: Knex, userId: string, personaConnectionId: string | null): Promise<ReplyConnectionRow | undefined> {
  const query = knex("provider_connections")
    .where({ user_id: userId })
    .andWhere((which) => {
      which.where({ is_default: true });
      if (personaConnectionId) which.orWhere({ id: personaConnectionId });
    })
    .select("id", "name", "base_url", "api_key_encrypted", "model", "context_window", "updated_at");
  if (personaConnectionId) query.orderByRaw("(id = ?) DESC", [personaConnectionId]);
  return query.first();
}
