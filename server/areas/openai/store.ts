import type { Knex } from "knex";
import { reservationCtes, type ReservationQuery } from "../../quota/usage.ts";
import { preparedOn } from "../../toolkit/db/prepared.ts";
import { cardContextSql, type cardContextFromRow } from "../cards/index.ts";
import { hasKnowledgeSql } from "../knowledge/index.ts";
import { personaFromJson, type PersonaRow } from "../personas/index.ts";

/** What a completion needs from the database before the model is asked, read by `loadCompletionStart`. */
export interface CompletionStart {
  /** The persona the request names as its model; null when there is none the caller may use (nothing is reserved then). */
  persona: PersonaRow | null;
  /** The message count after the reservation; null when nothing was reserved (no persona, or the quota is used up). */
  reserved: number | null;
  /** The caller's plan, its message limit and the messages sent before this one: a refused reservation's 402. */
  plan: string;
  messages_limit: number;
  used: number;
  /** The usage period the message is counted in (`YYYY-MM-DD`), to give it back in. */
  period_start: string;
  /** Whether the persona has knowledge of the caller's: retrieval runs only then. */
  has_knowledge: boolean;
  /** The persona's card row, for `cardContextFromRow`. */
  card: Parameters<typeof cardContextFromRow>[0];
}

/**
 * The persona `persona` (a query of the personas area: the persona's columns, at most one row)
 * and, only when it is found, one message of the caller's monthly quota reserved with its lease,
 * the persona's knowledge flag and its card context: the completion's one round trip before the
 * model. The other areas' rows are reached through the SQL fragments they export.
 */
export async function loadCompletionStart(
  knex: Knex,
  q: { userId: string; persona: Knex.QueryBuilder; quota: ReservationQuery; databaseKind: "embedded" | "postgres" },
): Promise<CompletionStart> {
  const reservation = reservationCtes(q.quota, "EXISTS (SELECT 1 FROM p)");
  const sql = `WITH p AS (SELECT chosen.* FROM ? AS chosen LIMIT 1),
     ${reservation.sql}
     SELECT
       (SELECT row_to_json(p) FROM p) AS persona,
       (SELECT messages_sent FROM reserved) AS reserved,
       (SELECT count(*) FROM lease) AS leased,
       coalesce((SELECT plan FROM quota), 'free') AS plan,
       (SELECT messages_limit FROM quota) AS messages_limit,
       (SELECT messages_sent FROM counted) AS used,
       (SELECT to_char(start, 'YYYY-MM-DD') FROM period) AS period_start,
       ${hasKnowledgeSql("(SELECT id FROM p)")} AS has_knowledge,
       ${cardContextSql("(SELECT id FROM p)")} AS card`;
  // Named by its whole text, the persona query's SQL included: one shape per kind of model name.
  const options = preparedOn(q.databaseKind, () => sql + q.persona.toSQL().sql);
  const result = await knex.raw<{ rows: Record<string, unknown>[] }>(sql, [q.persona, ...reservation.bindings, q.userId]).options(options);
  const row = result.rows[0]!;
  const persona = row.persona as Parameters<typeof personaFromJson>[0] | null;
  return { ...(row as unknown as CompletionStart), persona: persona && personaFromJson(persona) };
}
