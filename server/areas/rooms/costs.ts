import type { Knex } from "knex";

/**
 * The persona replies stored in rooms, one row per reply in the shape every priced reply has
 * (issue 40, docs/adr/0375): whom it is billed to (the member whose post it answers; null once that
 * account is purged, `forgetBilledMembers`), the persona, when, the model, whether it ran on a
 * user's own key, its tokens and its cost in nano-USD. The areas that sum what replies cost
 * (conversations' usage and operator report, studio analytics) read it beside their own, so
 * room_messages stays this area's.
 */
export const ROOM_PRICED_REPLIES_SQL = `SELECT billed_user_id AS user_id, persona_id, created_at, coalesce(model_id, model, 'unknown') AS model, own_key,
  input_tokens, output_tokens, cost_nanos FROM room_messages WHERE sender_type = 'persona'`;

/** The purge: a purged member's replies stay in their rooms, billed to no one. */
export async function forgetBilledMembers(knex: Knex, userIds: readonly string[]): Promise<void> {
  await knex("room_messages").whereIn("billed_user_id", userIds).update({ billed_user_id: null });
}
