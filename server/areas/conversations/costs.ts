import type { Services } from "../../toolkit/services.ts";
import { ROOM_PRICED_REPLIES_SQL } from "../rooms/index.ts";

/*
 * What stored replies cost (issue 40; docs/adr/0365): every reply records the registry model that
 * answered, its tokens and its cost in nano-USD (0 on the user's own key). Sums over a period, for
 * the usage endpoint and the operator's report, of conversation replies and of persona replies in
 * rooms (billed to the member whose post they answer; docs/adr/0375). Greetings (depth 0) are no
 * replies.
 */

/** Every priced reply: conversations' and rooms', in one shape (rooms/costs.ts). */
const PRICED_REPLIES = `(SELECT user_id, persona_id, created_at, coalesce(model_id, model, 'unknown') AS model, own_key, input_tokens, output_tokens, cost_nanos
     FROM messages WHERE role = 'assistant' AND depth > 0
   UNION ALL ${ROOM_PRICED_REPLIES_SQL}) AS r`;

export interface ModelCosts {
  model: string;
  replies: number;
  ownKeyReplies: number;
  inputTokens: number;
  outputTokens: number;
  costNanos: number;
}

export interface ReplyCosts extends Omit<ModelCosts, "model"> {
  /** Per model, the most replies first. */
  byModel: ModelCosts[];
}

interface SumRow {
  model: string;
  replies: string | number;
  own_key: string | number;
  input_tokens: string | number;
  output_tokens: string | number;
  cost_nanos: string | number;
}

/** The sums of one group's replies; bigint sums come from pg as text. */
const sums = (row: SumRow): Omit<ModelCosts, "model"> => ({
  replies: Number(row.replies),
  ownKeyReplies: Number(row.own_key),
  inputTokens: Number(row.input_tokens),
  outputTokens: Number(row.output_tokens),
  costNanos: Number(row.cost_nanos),
});

const SUMS = `count(*) AS replies, count(*) FILTER (WHERE own_key) AS own_key,
  coalesce(sum(input_tokens), 0)::text AS input_tokens, coalesce(sum(output_tokens), 0)::text AS output_tokens,
  coalesce(sum(cost_nanos), 0)::text AS cost_nanos`;

/** The user's replies stored in [from, to), per model (the `messages (user_id, created_at)` and `room_messages_billed` indexes). */
export async function replyCostsOf(services: Services, userId: string, from: Date, to: Date): Promise<ReplyCosts> {
  const { rows } = await services.db.knex.raw<{ rows: SumRow[] }>(
    `SELECT r.model, ${SUMS}
       FROM ${PRICED_REPLIES} WHERE r.user_id = ? AND r.created_at >= ? AND r.created_at < ?
      GROUP BY 1 ORDER BY count(*) DESC, 1`,
    [userId, from, to],
  );
  const byModel = rows.map((row) => ({ model: row.model, ...sums(row) }));
  const total = (field: keyof Omit<ModelCosts, "model">) => byModel.reduce((sum, model) => sum + model[field], 0);
  return { replies: total("replies"), ownKeyReplies: total("ownKeyReplies"), inputTokens: total("inputTokens"), outputTokens: total("outputTokens"), costNanos: total("costNanos"), byModel };
}

/** One line of the operator's cost report: a user or a persona (with its name), and its replies' sums. */
export interface CostLine extends Omit<ModelCosts, "model"> {
  id: string;
  /** The persona's name (per persona); null per user. */
  name: string | null;
}

/**
 * The operator's cost report over [from, to): per user (whose replies they were) or per persona
 * (who answered), the most costly first, at most `limit` lines.
 */
export async function costReport(services: Services, by: "user" | "persona", window: { from: Date; to: Date; limit: number }): Promise<CostLine[]> {
  const perPersona = by === "persona";
  const { rows } = await services.db.knex.raw<{ rows: (SumRow & { id: string; name: string | null })[] }>(
    `SELECT r.${perPersona ? "persona_id" : "user_id"} AS id, ${perPersona ? "(SELECT p.name FROM personas p WHERE p.id = r.persona_id)" : "NULL"} AS name, '' AS model, ${SUMS}
       FROM ${PRICED_REPLIES} WHERE r.created_at >= ? AND r.created_at < ? AND r.${perPersona ? "persona_id" : "user_id"} IS NOT NULL
      GROUP BY 1 ORDER BY sum(coalesce(r.cost_nanos, 0)) DESC, count(*) DESC, 1 LIMIT ?`,
    [window.from, window.to, window.limit],
  );
  return rows.map((row) => ({ id: row.id, name: row.name, ...sums(row) }));
}
