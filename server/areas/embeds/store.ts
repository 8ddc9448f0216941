import type { Knex } from "knex";

// All SQL of the embeds area, on its own tables (migration 0033).

/** A persona's embed settings, as stored once its owner saved them. */
export interface EmbedSettingsRow {
  persona_id: string;
  user_id: string;
  enabled: boolean;
  allowed_origins: string[];
  daily_message_cap: number;
  created_at: Date;
  updated_at: Date;
}

export interface GuestRow {
  id: string;
  persona_id: string;
  token_hash: string;
  created_at: Date;
  last_seen_at: Date;
}

export interface EmbedConversationRow {
  conversation_id: string;
  persona_id: string;
  user_id: string;
  guest_id: string | null;
  visitor_messages: number;
  started_at: Date;
  last_message_at: Date | null;
}

const settingsTable = (knex: Knex) => knex<EmbedSettingsRow>("persona_embeds");
const guests = (knex: Knex) => knex<GuestRow>("embed_guests");
const conversations = (knex: Knex) => knex<EmbedConversationRow>("embed_conversations");

export async function findSettings(knex: Knex, personaId: string): Promise<EmbedSettingsRow | undefined> {
  return settingsTable(knex).where({ persona_id: personaId }).first();
}

/** Writes the whole row (insert or replace); answers it as stored. */
export async function saveSettings(knex: Knex, row: EmbedSettingsRow): Promise<EmbedSettingsRow> {
  const [saved] = await settingsTable(knex)
    .insert(row)
    .onConflict("persona_id")
    .merge(["enabled", "allowed_origins", "daily_message_cap", "updated_at"])
    .returning("*");
  return saved as EmbedSettingsRow;
}

export async function settingsOfUser(knex: Knex, userId: string): Promise<EmbedSettingsRow[]> {
  return settingsTable(knex).where({ user_id: userId }).orderBy("created_at");
}

export async function insertGuest(knex: Knex, row: GuestRow): Promise<void> {
  await guests(knex).insert(row);
}

/** The guest a token hash names, if it is one of this persona's; its `last_seen_at` moves to `now` at most once an hour. */
export async function findGuest(knex: Knex, personaId: string, tokenHash: string, now: Date): Promise<GuestRow | undefined> {
  const row = await guests(knex).where({ token_hash: tokenHash, persona_id: personaId }).first();
  if (row && now.getTime() - row.last_seen_at.getTime() > 60 * 60 * 1000) {
    await guests(knex).where({ id: row.id }).update({ last_seen_at: now });
  }
  return row;
}

/** Forgets visitors unseen since `before`; their conversations stay the owner's. */
export async function deleteGuestsUnseenSince(knex: Knex, before: Date): Promise<number> {
  return guests(knex).where("last_seen_at", "<", before).delete();
}

export async function conversationOfGuest(knex: Knex, guestId: string): Promise<EmbedConversationRow | undefined> {
  return conversations(knex).where({ guest_id: guestId }).first();
}

/** Records a visitor's conversation; false when the visitor has one already (two first messages at once). */
export async function insertEmbedConversation(knex: Knex, row: EmbedConversationRow): Promise<boolean> {
  const inserted = await conversations(knex).insert(row).onConflict(knex.raw("(guest_id)")).ignore().returning("conversation_id");
  return inserted.length > 0;
}

/** One more visitor message in the conversation. */
export async function countVisitorMessage(knex: Knex, conversationId: string, at: Date): Promise<void> {
  await conversations(knex)
    .where({ conversation_id: conversationId })
    .update({ visitor_messages: knex.raw("visitor_messages + 1"), last_message_at: at });
}

/** A page of a persona's visitor conversations, newest first, with their total. */
export async function pageEmbedConversations(knex: Knex, personaId: string, window: { limit: number; offset: number }): Promise<{ rows: EmbedConversationRow[]; total: number }> {
  const [rows, counted] = await Promise.all([
    conversations(knex)
      .where({ persona_id: personaId })
      .orderBy([{ column: "started_at", order: "desc" }, { column: "conversation_id", order: "desc" }])
      .limit(window.limit)
      .offset(window.offset),
    conversations(knex).where({ persona_id: personaId }).count({ n: "*" }).first(),
  ]);
  return { rows, total: Number(counted?.n ?? 0) };
}

export async function embedConversationsOfUser(knex: Knex, userId: string): Promise<EmbedConversationRow[]> {
  return conversations(knex).where({ user_id: userId }).orderBy("started_at");
}

/**
 * Takes one of the persona's `cap` messages of `day` (UTC): true when one was left. One statement,
 * so racing visitors cannot pass the cap together.
 */
export async function takeDailyMessage(knex: Knex, personaId: string, day: string, cap: number): Promise<boolean> {
  const result = await knex.raw<{ rows: unknown[] }>(
    `INSERT INTO embed_daily_usage (persona_id, day, sent) VALUES (?, ?, 1)
     ON CONFLICT (persona_id, day) DO UPDATE SET sent = embed_daily_usage.sent + 1
     WHERE embed_daily_usage.sent < ?
     RETURNING sent`,
    [personaId, day, cap],
  );
  return result.rows.length > 0;
}

/** Gives back a message taken for a turn that was refused before it ran. */
export async function giveBackDailyMessage(knex: Knex, personaId: string, day: string): Promise<void> {
  await knex("embed_daily_usage").where({ persona_id: personaId, day }).where("sent", ">", 0).decrement("sent", 1);
}

export async function dailyMessages(knex: Knex, personaId: string, day: string): Promise<number> {
  const row = await knex("embed_daily_usage").where({ persona_id: personaId, day }).first("sent");
  return Number((row as { sent?: number } | undefined)?.sent ?? 0);
}

/** Drops the daily counts of days before `day`. */
export async function deleteDailyUsageBefore(knex: Knex, day: string): Promise<void> {
  await knex("embed_daily_usage").where("day", "<", day).delete();
}
