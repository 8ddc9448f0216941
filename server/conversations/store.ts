import type { Knex } from "knex";
import { offsetPage } from "../db/paging.ts";
import type { PageWindow } from "../http/paging.ts";
import type { Citation } from "../replies/types.ts";

export interface ConversationRow {
  id: string;
  user_id: string;
  persona_id: string;
  title: string | null;
  message_count: number;
  created_at: Date;
  updated_at: Date;
}

/** A knowledge chunk a reply used, stored in `messages.citations`. */
export type CitationRecord = Citation;

export interface MessageRow {
  id: string;
  conversation_id: string;
  user_id: string;
  persona_id: string;
  role: "user" | "assistant";
  content: string;
  content_tokens: number;
  model: string | null;
  input_tokens: number | null;
  output_tokens: number | null;
  citations: CitationRecord[] | null;
  created_at: Date;
}

const CONVERSATION_COLUMNS = ["id", "user_id", "persona_id", "title", "message_count", "created_at", "updated_at"] as const;
const MESSAGE_COLUMNS = [
  "id", "conversation_id", "user_id", "persona_id", "role", "content", "content_tokens", "model", "input_tokens",
  "output_tokens", "citations", "created_at",
] as const;

export async function insertConversation(knex: Knex, row: ConversationRow): Promise<ConversationRow> {
  const [inserted] = await knex("conversations").insert(row).returning([...CONVERSATION_COLUMNS]);
  return inserted as ConversationRow;
}

/** The user's conversation; undefined for another user's or an unknown id. */
export async function findUserConversation(knex: Knex, userId: string, id: string): Promise<ConversationRow | undefined> {
  return knex("conversations").select([...CONVERSATION_COLUMNS]).where({ id, user_id: userId }).first();
}

export async function listUserConversations(
  knex: Knex,
  userId: string,
  personaId: string | undefined,
  window: PageWindow,
): Promise<{ rows: ConversationRow[]; total: number }> {
  const query = knex("conversations").select([...CONVERSATION_COLUMNS]).where({ user_id: userId });
  if (personaId) query.andWhere({ persona_id: personaId });
  return offsetPage<ConversationRow>(query, "updated_at desc, id desc", window);
}

export async function deleteUserConversation(knex: Knex, userId: string, id: string): Promise<boolean> {
  return (await knex("conversations").where({ id, user_id: userId }).delete()) > 0;
}

/** What titling a conversation needs: its current title and its persona's model. */
export async function titleSource(knex: Knex, id: string): Promise<{ title: string | null; model: string } | undefined> {
  return knex("conversations as c").join("personas as p", "p.id", "c.persona_id").select("c.title", "p.model").where("c.id", id).first();
}

/** Sets a generated title unless the conversation got one meanwhile. */
export async function setTitleIfUnset(knex: Knex, id: string, title: string): Promise<void> {
  await knex("conversations").where({ id }).whereNull("title").update({ title });
}

/** The `count` most recent messages, newest first. */
export async function recentMessages(knex: Knex, conversationId: string, count: number): Promise<MessageRow[]> {
  return knex("messages")
    .select([...MESSAGE_COLUMNS])
    .where({ conversation_id: conversationId })
    .orderBy([{ column: "created_at", order: "desc" }, { column: "id", order: "desc" }])
    .limit(count);
}

/** The first user message and the first reply of a conversation (for its title). */
export async function firstMessages(knex: Knex, conversationId: string): Promise<MessageRow[]> {
  return knex("messages")
    .select([...MESSAGE_COLUMNS])
    .where({ conversation_id: conversationId })
    .orderBy([{ column: "created_at", order: "asc" }, { column: "id", order: "asc" }])
    .limit(2);
}

export async function findMessage(knex: Knex, conversationId: string, id: string): Promise<MessageRow | undefined> {
  return knex("messages").select([...MESSAGE_COLUMNS]).where({ id, conversation_id: conversationId }).first();
}

/**
 * A page of messages, newest first, optionally only those older than `before` (by creation time,
 * then id, so that messages of the same instant still page stably). One extra row tells `hasMore`.
 */
export async function pageMessages(
  knex: Knex,
  conversationId: string,
  page: { before?: MessageRow | undefined; limit: number; offset: number },
): Promise<{ rows: MessageRow[]; hasMore: boolean }> {
  const query = knex("messages").select([...MESSAGE_COLUMNS]).where({ conversation_id: conversationId });
  if (page.before) query.andWhereRaw("(created_at, id) < (?, ?)", [page.before.created_at, page.before.id]);
  const rows = (await query
    .orderBy([{ column: "created_at", order: "desc" }, { column: "id", order: "desc" }])
    .limit(page.limit + 1)
    .offset(page.offset)) as MessageRow[];
  return { rows: rows.slice(0, page.limit), hasMore: rows.length > page.limit };
}

/**
 * Stores messages of one conversation with their outbox events and moves the counters
 * (conversation and persona `message_count`, `updated_at`), all in one statement: atomic without a
 * transaction's extra round trips, which matters on the chat path where every round trip is latency.
 */
export async function insertMessages(knex: Knex, conversation: ConversationRow, messages: MessageRow[], events: object[], at: Date): Promise<void> {
  const rows = messages.map((m) => ({ ...m, citations: m.citations === null ? null : JSON.stringify(m.citations) }));
  await knex
    .with("stored", (q) => q.insert(rows).into("messages"))
    .with("events", (q) => q.insert(events).into("event_outbox"))
    .with("conversation", (q) =>
      q.table("conversations").where({ id: conversation.id }).update({ message_count: knex.raw("message_count + ?", [messages.length]), updated_at: at }),
    )
    .with("persona", (q) => q.table("personas").where({ id: conversation.persona_id }).update({ message_count: knex.raw("message_count + ?", [messages.length]) }))
    .select(knex.raw("1"));
}

export interface SearchHitRow extends MessageRow {
  conversation_title: string | null;
  highlight_raw: string;
}

/**
 * Full-text search over the user's own messages, best match first, newest first among equals.
 * `ts_headline` marks the matches with control characters (stripped from the content first) so
 * that the caller can HTML-escape the text and only then turn the markers into `<mark>` tags.
 */
export async function searchUserMessages(
  knex: Knex,
  userId: string,
  q: string,
  window: PageWindow,
  marks: { start: string; stop: string },
): Promise<{ rows: SearchHitRow[]; total: number }> {
  const query = knex.raw("websearch_to_tsquery('english', ?)", [q]);
  const hits = knex("messages as m")
    .join("conversations as c", "c.id", "m.conversation_id")
    .select(MESSAGE_COLUMNS.map((column) => `m.${column}`))
    .select({ conversation_title: "c.title" })
    .select(
      knex.raw(
        "ts_headline('english', translate(m.content, ?, '  '), ?, ?) as highlight_raw",
        [`${marks.start}${marks.stop}`, query, `StartSel=${marks.start}, StopSel=${marks.stop}, HighlightAll=true`],
      ),
    )
    // Selected under a name so that the order, which takes no bindings, can refer to it.
    .select(knex.raw("ts_rank_cd(m.search, ?) as search_rank", [query]))
    .where("m.user_id", userId)
    .whereRaw("m.search @@ ?", [query]);
  return offsetPage<SearchHitRow>(hits, "search_rank desc, m.created_at desc, m.id desc", window);
}
