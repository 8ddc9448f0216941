import type { Knex } from "knex";
import type { ModelSettings } from "../personas/index.ts";
import { ROOM_PRICED_REPLIES_SQL } from "../rooms/index.ts";

/**
 * An SQL scalar: the instructions of the A/B variant the conversation `conversation` (an SQL
 * expression) was assigned, or null. For the chat turn's statement, which reads it in its own round trip.
 */
export const variantInstructionsSql = (conversation: string) =>
  `(SELECT v.instructions FROM variant_assignments a JOIN persona_variants v ON v.id = a.variant_id WHERE a.conversation_id = ${conversation})`;

/** `variantInstructionsSql`'s companion: the variant's generation settings (`{}`: none), or null without a variant (issue 40). */
export const variantSettingsSql = (conversation: string) =>
  `(SELECT v.model_settings FROM variant_assignments a JOIN persona_variants v ON v.id = a.variant_id WHERE a.conversation_id = ${conversation})`;

export interface VariantRow {
  id: string;
  persona_id: string;
  name: string;
  instructions: string;
  traffic_percentage: number;
  created_at: Date;
  updated_at: Date | null;
  /** Over the persona's settings in the variant's conversations (issue 40); `{}`: none. */
  model_settings: ModelSettings;
}

export interface VariantMetricsRow {
  message_count: number;
  avg_rating: number | null;
  retention_rate: number | null;
}

const fromDb = (row: Record<string, unknown>): VariantRow => ({ ...(row as unknown as VariantRow), traffic_percentage: Number(row.traffic_percentage) });

/** Oldest first: the order assignment walks the shares in. */
export async function listVariantsOf(knex: Knex, personaId: string): Promise<VariantRow[]> {
  const rows = await knex("persona_variants").where({ persona_id: personaId }).orderBy([{ column: "created_at" }, { column: "id" }]);
  return rows.map(fromDb);
}

export async function findVariant(knex: Knex, personaId: string, id: string): Promise<VariantRow | undefined> {
  const row = await knex("persona_variants").where({ persona_id: personaId, id }).first();
  return row ? fromDb(row) : undefined;
}

/** Serialises changes of one persona's shares for the rest of the transaction. */
export async function lockPersonaForVariants(trx: Knex.Transaction, personaId: string): Promise<void> {
  await trx("personas").where({ id: personaId }).forUpdate().first("id");
}

/** The sum of the persona's shares, leaving out `exceptId`; exact (numeric). */
export async function trafficSum(trx: Knex.Transaction, personaId: string, exceptId?: string): Promise<string> {
  const query = trx("persona_variants").where({ persona_id: personaId });
  if (exceptId) query.whereNot({ id: exceptId });
  const row = await query.select(trx.raw("coalesce(sum(traffic_percentage), 0)::text as total")).first();
  return String(row?.total ?? "0");
}

/** Whether `sum + share` stays within 100, computed by the database in exact decimals. */
export async function fitsWithin100(trx: Knex.Transaction, sum: string, share: number): Promise<boolean> {
  const row = await trx.select(trx.raw("(?::numeric + ?::numeric) <= 100 as fits", [sum, String(share)])).first();
  return Boolean(row?.fits);
}

export async function insertVariant(trx: Knex.Transaction, row: VariantRow): Promise<VariantRow> {
  const [inserted] = await trx("persona_variants").insert({ ...row, traffic_percentage: String(row.traffic_percentage), model_settings: JSON.stringify(row.model_settings) }).returning("*");
  return fromDb(inserted);
}

/** Changes a variant's share, its settings, or both. */
export async function updateVariantRow(trx: Knex.Transaction, id: string, changes: { share?: number | undefined; settings?: ModelSettings | undefined }, now: Date): Promise<VariantRow> {
  const values: Record<string, unknown> = { updated_at: now };
  if (changes.share !== undefined) values.traffic_percentage = String(changes.share);
  if (changes.settings !== undefined) values.model_settings = JSON.stringify(changes.settings);
  const [row] = await trx("persona_variants").where({ id }).update(values).returning("*");
  return fromDb(row);
}

/**
 * What the persona's replies of [from, to] cost, in nano-USD, from the stored replies, in
 * conversations and in rooms (issue 40; the `messages (persona_id, created_at)` and
 * `room_messages_persona_replies` indexes): replies on users' own keys are stored at 0.
 */
export async function replyCostNanos(knex: Knex, personaId: string, from: Date, to: Date): Promise<number> {
  const { rows } = await knex.raw<{ rows: { nanos: string }[] }>(
    `SELECT coalesce(sum(r.cost_nanos), 0)::text AS nanos FROM (
       SELECT persona_id, created_at, cost_nanos FROM messages WHERE role = 'assistant'
       UNION ALL SELECT persona_id, created_at, cost_nanos FROM (${ROOM_PRICED_REPLIES_SQL}) AS rooms) AS r
      WHERE r.persona_id = ? AND r.created_at BETWEEN ? AND ?`,
    [personaId, from, to],
  );
  return Number(rows[0]?.nanos ?? 0);
}

export async function insertAssignment(knex: Knex, row: { conversation_id: string; variant_id: string; user_id: string; created_at: Date }): Promise<void> {
  await knex("variant_assignments").insert(row).onConflict("conversation_id").ignore();
}

export async function assignedVariant(knex: Knex, conversationId: string): Promise<VariantRow | undefined> {
  const row = await knex("variant_assignments as a").join("persona_variants as v", "v.id", "a.variant_id").where("a.conversation_id", conversationId).first("v.*");
  return row ? fromDb(row) : undefined;
}

/**
 * Metrics of each variant from the conversations assigned to it: their messages; the mean listing
 * rating of their users; retention over the variant's life so far, split at its midpoint (the
 * analytics definition: users active in the first half who were active again in the second).
 */
export async function variantMetrics(knex: Knex, variantIds: string[], now: Date): Promise<Map<string, VariantMetricsRow>> {
  if (variantIds.length === 0) return new Map();
  const rows: { id: string; message_count: string | number; avg_rating: string | number | null; first_half: string | number; retained: string | number }[] = await knex
    .with("a", (q) => q.from("variant_assignments as a").join("persona_variants as v", "v.id", "a.variant_id").whereIn("a.variant_id", variantIds).select("a.*", "v.persona_id", "v.created_at as since"))
    .with("m", (q) =>
      q.from("a").join("messages as m", "m.conversation_id", "a.conversation_id").where("m.role", "user")
        .select("a.variant_id", "m.user_id", knex.raw("m.created_at < a.since + (?::timestamptz - a.since) / 2 as first_half", [now.toISOString()])),
    )
    .from("persona_variants as v")
    .whereIn("v.id", variantIds)
    .select(
      "v.id",
      // Exchanged messages: a conversation's greetings (depth 0) are not counted.
      knex.raw("(SELECT count(*) FROM a JOIN messages x ON x.conversation_id = a.conversation_id WHERE a.variant_id = v.id AND x.depth > 0) AS message_count"),
      knex.raw(`(SELECT avg(r.rating) FROM ratings r JOIN marketplace_listings l ON l.id = r.listing_id
                 WHERE l.persona_id = v.persona_id AND r.user_id IN (SELECT user_id FROM a WHERE a.variant_id = v.id)) AS avg_rating`),
      knex.raw("(SELECT count(DISTINCT user_id) FROM m WHERE m.variant_id = v.id AND m.first_half) AS first_half"),
      knex.raw(`(SELECT count(DISTINCT f.user_id) FROM m f WHERE f.variant_id = v.id AND f.first_half
                 AND EXISTS (SELECT 1 FROM m s WHERE s.variant_id = v.id AND s.user_id = f.user_id AND NOT s.first_half)) AS retained`),
    );
  return new Map(
    rows.map((row) => [
      row.id,
      {
        message_count: Number(row.message_count),
        avg_rating: row.avg_rating === null ? null : Math.round(Number(row.avg_rating) * 100) / 100,
        retention_rate: Number(row.first_half) === 0 ? null : Number(row.retained) / Number(row.first_half),
      },
    ]),
  );
}

/** Messages of each UTC day in [fromDay, toDay] that had any (days since the Unix epoch), from the daily rollup. */
export async function dailyMessages(knex: Knex, personaId: string, fromDay: number, toDay: number): Promise<Map<number, number>> {
  const rows: { day: number; messages: number }[] = await knex("persona_daily_messages")
    .where({ persona_id: personaId })
    .whereBetween("day", [fromDay, toDay])
    .select("day", "messages");
  return new Map(rows.map((row) => [Number(row.day), Number(row.messages)]));
}

export interface SenderFigures {
  /** Distinct senders of each UTC day that had any. */
  byDay: Map<number, number>;
  /** Distinct senders over [fromDay, toDay]. */
  users: number;
  /** Distinct senders over [fromDay, splitDay). */
  firstHalf: number;
  /** Of those, how many sent again from splitDay on. */
  retained: number;
}

/**
 * Sender figures of a period from the senders rollup (migration 0014), at most 90 rows of a few
 * gaps each. A sender's first day in the period is the one whose previous sending day lies before
 * `fromDay` (gap > day - fromDay; a gap of 90 is "90 or more, or never", which no period of 90 days
 * can tell from never). A retained user's first day from `splitDay` on has its previous day in
 * [fromDay, splitDay), and every user has exactly one such day at most, so sums count users once.
 */
export async function senderFigures(knex: Knex, personaId: string, fromDay: number, splitDay: number, toDay: number): Promise<SenderFigures> {
  const rows: { day: number; users: string | number; first: string | number | null; first_half: string | number | null; retained: string | number | null }[] = await knex("persona_daily_senders")
    .where({ persona_id: personaId })
    .whereBetween("day", [fromDay, toDay])
    .groupBy("day")
    .select(
      "day",
      knex.raw("sum(users) AS users"),
      knex.raw("sum(users) FILTER (WHERE gap > day - ?) AS first", [fromDay]),
      knex.raw("sum(users) FILTER (WHERE day < ? AND gap > day - ?) AS first_half", [splitDay, fromDay]),
      knex.raw("sum(users) FILTER (WHERE day >= ? AND gap > day - ? AND gap <= day - ?) AS retained", [splitDay, splitDay, fromDay]),
    );
  const total = (key: "first" | "first_half" | "retained") => rows.reduce((sum, row) => sum + Number(row[key] ?? 0), 0);
  return {
    byDay: new Map(rows.map((row) => [Number(row.day), Number(row.users)])),
    users: total("first"),
    firstHalf: total("first_half"),
    retained: total("retained"),
  };
}

/** Mean of the ratings of the persona's listing given or changed in [from, to]; null when none. */
export async function ratingsMean(knex: Knex, personaId: string, from: Date, to: Date): Promise<number | null> {
  const row = await knex("ratings as r")
    .join("marketplace_listings as l", "l.id", "r.listing_id")
    .where("l.persona_id", personaId)
    .whereBetween("r.updated_at", [from, to])
    .avg({ mean: "r.rating" })
    .first();
  return row?.mean === null || row?.mean === undefined ? null : Number(row.mean);
}
