import type { Knex } from "knex";
import { reservationCtes, type ReservationOutcome, type ReservationQuery } from "../../quota/usage.ts";
import { runStatement } from "../../toolkit/db/positional.ts";
import { preparedOn } from "../../toolkit/db/prepared.ts";
import type { SqlFragment } from "../../toolkit/db/query-template.ts";
import { cardContextSql, type cardContextFromRow } from "../cards/index.ts";
import { hasKnowledgeSql } from "../knowledge/index.ts";
import { personaFromJson, type PersonaRow } from "../personas/index.ts";
import { QUOTA_NOT_EXEMPT, REPLY_CONNECTION_CTES, REPLY_CONNECTION_SELECT, type ReplyConnectionRow } from "../models/index.ts";

/** What a completion needs from the database before the model is asked, read by `loadCompletionStart`. */
export interface CompletionStart extends ReservationOutcome {
  /** The persona the request names as its model; null when there is none the caller may use (nothing is reserved then). */
  persona: PersonaRow | null;
  /** Whether the persona has knowledge of the caller's: retrieval runs only then. */
  has_knowledge: boolean;
  /** The persona's card row, for `cardContextFromRow`. */
  card: Parameters<typeof cardContextFromRow>[0];
  /** The caller's own provider connection the reply runs on (issue 40); null: the persona's model. */
  connection: ReplyConnectionRow | null;
  /** The reply runs on the caller's own key and the operator does not count such replies: nothing was reserved, and none is owed. */
  quota_exempt: boolean;
}

/**
 * The persona `persona` (a query of the personas area: the persona's columns, at most one row)
 * and, only when it is found, one message of the caller's monthly quota reserved with its lease,
 * the persona's knowledge flag and its card context: the completion's one round trip before the
 * model. The other areas' rows are reached through the SQL fragments they export.
 */
export async function loadCompletionStart(
  knex: Knex,
  q: { userId: string; persona: SqlFragment; quota: ReservationQuery; databaseKind: "embedded" | "postgres"; connection: readonly [boolean, string, boolean] },
): Promise<CompletionStart> {
  const reservation = reservationCtes(q.quota, `EXISTS (SELECT 1 FROM p) AND ${QUOTA_NOT_EXEMPT}`);
  const sql = `WITH p AS (SELECT chosen.* FROM (${q.persona.sql}) AS chosen LIMIT 1),
     ${REPLY_CONNECTION_CTES},
     ${reservation.sql}
     SELECT
       (SELECT row_to_json(p) FROM p) AS persona,
       ${reservation.outcome},
       ${hasKnowledgeSql("(SELECT id FROM p)")} AS has_knowledge,
       ${cardContextSql("(SELECT id FROM p)")} AS card,
       ${REPLY_CONNECTION_SELECT}`;
  // Named by its whole text, the persona query's included: one shape per kind of model name.
  const result = await runStatement(knex, sql, [...q.persona.bindings, ...q.connection, ...reservation.bindings, q.userId], preparedOn(q.databaseKind, () => sql));
  const row = result.rows[0]!;
  const persona = row.persona as Parameters<typeof personaFromJson>[0] | null;
  return { ...(row as unknown as CompletionStart), persona: persona && personaFromJson(persona) };
}
