import type { Knex } from "knex";
import { offsetPage } from "../../toolkit/db/paging.ts";
import { jsonRows } from "../../toolkit/db/rows.ts";
import { OUTBOX_COLUMNS, type OutboxRecord } from "../../toolkit/events/outbox.ts";
import { runCarrying, type StatementPart } from "../../toolkit/db/statement-parts.ts";
import type { PageWindow } from "../../toolkit/http/paging.ts";
import { cardContextSql, type cardContextFromRow } from "../cards/index.ts";
import { hasKnowledgeSql } from "../knowledge/index.ts";
import type { Citation } from "../replies/index.ts";
import { variantInstructionsSql, variantSettingsSql } from "../studio/index.ts";
import { QUOTA_NOT_EXEMPT, REPLY_CONNECTION_CTES, REPLY_CONNECTION_SELECT, type ReplyConnectionRow } from "../models/index.ts";
import type { ModelSettings } from "../personas/index.ts";
import { alternativeColumns, parentOf, pathCte, pathQuery } from "./tree/path-sql.ts";
import { preparedOn } from "../../toolkit/db/prepared.ts";
import { runStatement } from "../../toolkit/db/positional.ts";
import type { SqlFragment } from "../../toolkit/db/query-template.ts";
import { reservationCtes, settledLeasesPart, type ReservationOutcome, type ReservationQuery } from "../../quota/usage.ts";

export interface ConversationRow {
  id: string;
  user_id: string;
  persona_id: string;
  title: string | null;
  /** Length of the active path (the depth of its leaf). */
  message_count: number;
  /** The leaf of the active path; null before the first message. */
  active_message_id: string | null;
  /** Token totals of its replies (bigint columns: strings from pg, numbers from PGlite). */
  input_tokens_total: number | string;
  output_tokens_total: number | string;
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
  /** A reply stopped on request (issue 21). */
  stopped: boolean;
  /** A reply's registry model (issue 40): the persona's, or the fallback that answered for it. */
  model_id?: string | null;
  /** The persona's model when it failed before answering and `model_id` answered for it. */
  fallback_from?: string | null;
  /** The reply ran on the user's own provider connection. */
  own_key?: boolean;
  /** What the reply cost at the registry's prices, in nano-USD (bigint: text from pg); 0 on the user's own key. */
  cost_nanos?: number | string | null;
  created_at: Date;
  /** The previous message on its path; null for a first message. */
  parent_id: string | null;
  /** Position on its path: 0 for a greeting, from 1 for the exchanged messages (greetings.ts). */
  depth: number;
  /** Among its siblings of the same role (alternatives), when the query read them. */
  alternative_index?: number;
  alternative_count?: number;
}

export const CONVERSATION_COLUMNS = [
  "id", "user_id", "persona_id", "title", "message_count", "active_message_id", "input_tokens_total", "output_tokens_total", "created_at", "updated_at",
] as const;
export const MESSAGE_COLUMNS = [
  "id", "conversation_id", "user_id", "persona_id", "role", "content", "content_tokens", "model", "input_tokens",
  "output_tokens", "citations", "stopped", "created_at", "parent_id", "depth", "model_id", "fallback_from", "own_key", "cost_nanos",
] as const;

/**
 * The active path of conversation `?` as the CTE `path`, for `knex.withRecursive`, walked only down
 * to `floor` (a SQL integer expression on the leaf `m`): a page of a long conversation reads no
 * further than the page.
 */
function activePath(knex: Knex, conversationId: string, floor: string): Knex.Raw {
  return knex.raw(pathQuery("path", MESSAGE_COLUMNS, "(SELECT active_message_id FROM conversations WHERE id = ?)", floor), [conversationId]);
}

/** An integer for SQL text (page sizes and depths the server computed, never raw input). */
const int = (value: number) => String(Math.trunc(value));

/** Messages of the active path with their alternatives, from the CTE `path`. */
function fromPath(knex: Knex, conversationId: string, floor: string): Knex.QueryBuilder {
  return knex
    .withRecursive("path", activePath(knex, conversationId, floor))
    .from("path")
    .select([...MESSAGE_COLUMNS].map((column) => `path.${column}`))
    .select(knex.raw(alternativeColumns("path")));
}

export async function insertConversation(knex: Knex, row: Omit<ConversationRow, "input_tokens_total" | "output_tokens_total">): Promise<ConversationRow> {
  const [inserted] = await knex("conversations").insert(row).returning([...CONVERSATION_COLUMNS]);
  return inserted as ConversationRow;
}

/** Stores a new conversation's greetings (no event, no counter: they are not exchanged messages). */
export async function insertGreetings(knex: Knex, messages: MessageRow[]): Promise<void> {
  if (messages.length === 0) return;
  await knex("messages").insert(messages.map(({ alternative_index: _index, alternative_count: _count, ...m }) => ({ ...m, citations: null })));
}

/** How many conversations people have started with the persona (its `persona_id` index). */
export async function countConversationsOf(knex: Knex, personaId: string): Promise<number> {
  const [row] = await knex("conversations").where({ persona_id: personaId }).count<{ count: string | number }[]>({ count: "*" });
  return Number(row?.count ?? 0);
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
export async function titleSource(knex: Knex, id: string): Promise<{ title: string | null; model: string; user_id: string; provider_connection_id: string | null } | undefined> {
  return knex("conversations as c").join("personas as p", "p.id", "c.persona_id").select("c.title", "p.model", "c.user_id", "p.provider_connection_id").where("c.id", id).first();
}

/** Sets a generated title unless the conversation got one meanwhile. */
export async function setTitleIfUnset(knex: Knex, id: string, title: string): Promise<void> {
  await knex("conversations").where({ id }).whereNull("title").update({ title });
}

/** The `count` most recent messages of the active path, newest first. */
export async function recentMessages(knex: Knex, conversationId: string, count: number): Promise<MessageRow[]> {
  return fromPath(knex, conversationId, `m.depth - ${int(count)}`).orderBy("path.depth", "desc").limit(count);
}

/** The first user message and the first reply of a conversation (for its title), greetings left out (depth 0). */
export async function firstMessages(knex: Knex, conversationId: string): Promise<MessageRow[]> {
  return knex("messages")
    .select([...MESSAGE_COLUMNS])
    .where({ conversation_id: conversationId })
    .where("depth", ">", 0)
    .orderBy([{ column: "created_at", order: "asc" }, { column: "id", order: "asc" }])
    .limit(2);
}

/** A message of the conversation on any of its paths, with its alternatives. */
export async function findMessage(knex: Knex, conversationId: string, id: string): Promise<MessageRow | undefined> {
  return knex("messages as m")
    .select([...MESSAGE_COLUMNS].map((column) => `m.${column}`))
    .select(knex.raw(alternativeColumns("m")))
    .where({ "m.id": id, "m.conversation_id": conversationId })
    .first();
}

/**
 * A page of the active path, newest first, optionally only the messages before `before` on it (by
 * depth: a message of another branch stands for its position). One extra row tells `hasMore`.
 */
export async function pageMessages(
  knex: Knex,
  conversationId: string,
  page: { before?: MessageRow | undefined; limit: number; offset: number },
): Promise<{ rows: MessageRow[]; hasMore: boolean }> {
  // The page's last row (one past it tells has_more) is the lowest depth the walk needs.
  const span = page.offset + page.limit + 1;
  const query = fromPath(knex, conversationId, page.before ? int(page.before.depth - 1 - span) : `m.depth - ${int(span)}`);
  if (page.before) query.where("path.depth", "<", page.before.depth);
  const rows = (await query
    .orderBy("path.depth", "desc")
    .limit(page.limit + 1)
    .offset(page.offset)) as MessageRow[];
  return { rows: rows.slice(0, page.limit), hasMore: rows.length > page.limit };
}

/**
 * Stores messages of one conversation with their outbox events and moves the counters
 * (conversation and persona `message_count`, `updated_at`), all in one statement: atomic without a
 * transaction's extra round trips, which matters on the chat path where every round trip is latency.
 */
/**
 * Stores `messages` (the last is the new active leaf), their outbox `events` and the counters, and
 * ends the quota lease of each reply among them (a lease is its reply's id,
 * docs/adr/0096-quota-across-a-crash-a-durable-lease-per-reserved-message.md): one statement, so a
 * reply and the end of its lease are stored together or not at all. `parts` ride along
 * (statement-parts.ts): a streamed reply's generation row with its user message, its events and end
 * with the reply.
 */
export async function insertMessages(knex: Knex, conversation: ConversationRow, messages: MessageRow[], events: OutboxRecord[], at: Date, parts: readonly StatementPart[] = []): Promise<void> {
  const rows = messages.map(({ alternative_index: _index, alternative_count: _count, ...m }) => m);
  // The last message stored is the new active leaf, and the active path is as long as its depth.
  const leaf = messages.at(-1)!;
  // Rows as one JSON value each, and the events' CTE even with none: one text whatever the rows.
  const stored = jsonRows("messages", MESSAGE_COLUMNS, rows);
  const outbox = jsonRows("event_outbox", OUTBOX_COLUMNS, events as unknown as Record<string, unknown>[]);
  // What other owners' parts add (the replies' lease ends, a generation's row, events and state):
  // committed with the messages.
  const replies = messages.filter((message) => message.role === "assistant").map((message) => message.id);
  await runCarrying(knex, replies.length ? [settledLeasesPart(replies), ...parts] : parts, (carried) => ({
    sql: `WITH ${carried.ctes}stored AS (INSERT INTO messages (${stored.columns}) ${stored.select}),
     events AS (INSERT INTO event_outbox (${outbox.columns}) ${outbox.select}),
     conversation AS (UPDATE conversations SET message_count = ?, active_message_id = ?,
       input_tokens_total = input_tokens_total + ?, output_tokens_total = output_tokens_total + ?, updated_at = ? WHERE id = ?),
     persona AS (UPDATE personas SET message_count = message_count + ? WHERE id = ?)
     SELECT 1${carried.selects}`,
    bindings: [
      ...carried.cteBindings,
      ...stored.bindings,
      ...outbox.bindings,
      leaf.depth, leaf.id, sum(messages, "input_tokens"), sum(messages, "output_tokens"), at, conversation.id,
      messages.length, conversation.persona_id,
      ...carried.selectBindings,
    ],
  }));
}

function sum(messages: MessageRow[], column: "input_tokens" | "output_tokens"): number {
  return messages.reduce((total, message) => total + (message[column] ?? 0), 0);
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
    .select(knex.raw(alternativeColumns("m")))
    .where("m.user_id", userId)
    .whereRaw("m.search @@ ?", [query])
    // Only the active path of each conversation: other branches are kept, not shown.
    .whereRaw(
      `m.id IN (WITH RECURSIVE ${pathCte("active", ["id", "parent_id"], "ANY (SELECT active_message_id FROM conversations WHERE user_id = ?)")} SELECT id FROM active)`,
      [userId],
    );
  return offsetPage<SearchHitRow>(hits, "search_rank desc, m.created_at desc, m.id desc", window);
}

/** What a reply needs before the model is asked, read (and its quota reserved) in one statement. */
export interface TurnRow extends ReservationOutcome {
  /** The caller's conversation; null for another user's or an unknown one. */
  conversation: ConversationRow | null;
  /** Its persona while the caller may still see it; null otherwise (nothing was reserved then). */
  persona: { id: string; name: string; model: string; instructions: string; model_settings: ModelSettings; provider_connection_id: string | null } | null;
  /** The instructions of the A/B variant the conversation was assigned, if any. */
  variant_instructions: string | null;
  /** That variant's generation settings (`{}`: none), over the persona's. */
  variant_settings: ModelSettings | null;
  /** The user's own provider connection the reply runs on (issue 40); null: the persona's model. */
  connection: ReplyConnectionRow | null;
  /** The reply runs on the user's own key and the operator does not count such replies: nothing was reserved, and none is owed. */
  quota_exempt: boolean;
  /** The most recent messages of the history path after its summary, newest first (a greeting at depth 0). */
  history: { id: string; role: "user" | "assistant"; content: string; content_tokens: number; depth: number }[];
  /** The latest rolling summary of the history path's prefix, when one was written. */
  summary: { through_message_id: string; through_depth: number; content: string; content_tokens: number } | null;
  /** The persona has knowledge chunks of this user (retrieval is worth an embeddings call). */
  has_knowledge: boolean;
  /** The user message `retryOf` named, when it is in this conversation. */
  stored: MessageRow | null;
  /** The persona's character card context (its lorebook and example dialogue), when it has a card. */
  card: Parameters<typeof cardContextFromRow>[0];
}

export interface TurnQuery {
  userId: string;
  conversationId: string;
  /** `personas as p` limited to the personas the user may see (the personas area's rule). */
  /** The personas the caller may see, every column (the personas area's rule). */
  visiblePersonas: SqlFragment;
  historyWindow: number;
  /**
   * Where the history path ends: undefined for the active leaf, a message id of this conversation
   * (an edit or a regeneration answers from an earlier point), null for no history at all.
   */
  historyFrom?: string | null | undefined;
  retryOf: string | undefined;
  /** The month's quota: first day of the period, message limit by plan, the limit of any other plan. */
  /** One message of the monthly quota to reserve in the same statement (quota's `messageQuota`). */
  quota: ReservationQuery;
  /** On PostgreSQL the statement is prepared once per connection (db/prepared.ts). */
  databaseKind: "embedded" | "postgres";
  /** The bindings of the models area's connection CTEs (its `replyConnectionBindings`). */
  connection: readonly [boolean, string, boolean];
}

/**
 * How far a turn walks up its path: the history window and as much again, where the latest rolling
 * summary normally is (it is brought forward once the window fills), so a turn of a long
 * conversation reads its newest part, not all of it.
 */
const pathSteps = (historyWindow: number) => Math.trunc(historyWindow) * 2 + 1;

/**
 * The chat hot path's one round trip before the model is asked: the caller's conversation, its
 * persona if still visible, the assigned variant's instructions, the history window, whether the
 * persona has knowledge, and one message reserved against the monthly quota (quota's
 * `reservationCtes`, the statement every reservation uses, made only when conversation and persona
 * are there, so that a 404 costs no quota). Plan, limit and the count come back too, so a 402 needs no second query.
 */
export async function loadTurn(knex: Knex, q: TurnQuery): Promise<TurnRow> {
  // Nothing is reserved without the conversation and persona, nor for a reply on the user's own key that the quota exempts.
  const reservation = reservationCtes(q.quota, `EXISTS (SELECT 1 FROM p) AND ${QUOTA_NOT_EXEMPT}`);
  // No greeting: a conversation's is its first stored message, read with the history.
  const sql =
    `WITH RECURSIVE c AS (SELECT ${CONVERSATION_COLUMNS.join(", ")} FROM conversations WHERE id = ? AND user_id = ?),
     ${pathCte("hpath", ["id", "parent_id", "depth"], `(CASE WHEN ?::boolean THEN (SELECT id FROM messages WHERE id = ?::uuid AND conversation_id = (SELECT id FROM c)) ELSE (SELECT active_message_id FROM c) END)`, `m.depth - ${pathSteps(q.historyWindow)}`)},
     near AS (SELECT s.through_message_id, s.through_depth, s.content, s.content_tokens FROM conversation_summaries s
       JOIN hpath ON hpath.id = s.through_message_id WHERE s.conversation_id = (SELECT id FROM c) ORDER BY s.through_depth DESC LIMIT 1),
     -- No summary within the walk although older ones exist (the job fell behind, or a branch left
     -- them behind): walk on, only then, and no deeper than the oldest summary.
     oldest AS (SELECT min(through_depth) AS depth FROM conversation_summaries WHERE conversation_id = (SELECT id FROM c)),
     far AS (
       SELECT m.id, m.parent_id, m.depth FROM messages m
        WHERE m.id = (SELECT parent_id FROM hpath ORDER BY depth LIMIT 1) AND NOT EXISTS (SELECT 1 FROM near)
          AND m.depth >= (SELECT depth FROM oldest)
       UNION ALL
       SELECT m.id, m.parent_id, m.depth FROM far CROSS JOIN LATERAL (${parentOf("far", ["id", "parent_id", "depth"])} AND m.depth >= (SELECT depth FROM oldest) LIMIT 1) m),
     summary AS (SELECT * FROM near
       UNION ALL
       (SELECT s.through_message_id, s.through_depth, s.content, s.content_tokens FROM conversation_summaries s
         JOIN far ON far.id = s.through_message_id WHERE s.conversation_id = (SELECT id FROM c) ORDER BY s.through_depth DESC LIMIT 1)),
     p AS (SELECT vp.id, vp.name, vp.model, vp.instructions, vp.model_settings, vp.provider_connection_id FROM (${q.visiblePersonas.sql}) AS vp WHERE vp.id = (SELECT persona_id FROM c)),
     -- The user's own provider connection the reply runs on, if any (the models area's rule).
     ${REPLY_CONNECTION_CTES},
     -- One message of the monthly quota, reserved only when conversation and persona are there.
     ${reservation.sql}
     SELECT
       (SELECT row_to_json(c) FROM c) AS conversation,
       (SELECT row_to_json(p) FROM p) AS persona,
       ${variantInstructionsSql("(SELECT id FROM c)")} AS variant_instructions,
       (SELECT coalesce(json_agg(h ORDER BY h.depth DESC), '[]'::json) FROM (
         SELECT m.id, m.role, m.content, m.content_tokens, m.depth FROM hpath JOIN messages m ON m.id = hpath.id
         WHERE hpath.depth > coalesce((SELECT through_depth FROM summary), -1)
         ORDER BY hpath.depth DESC LIMIT ?) h) AS history,
       (SELECT row_to_json(summary) FROM summary) AS summary,
       ${reservation.outcome},
       ${hasKnowledgeSql("(SELECT id FROM p)")} AS has_knowledge,
       ${cardContextSql("(SELECT id FROM p)")} AS card,
       (SELECT row_to_json(m) FROM (SELECT ${MESSAGE_COLUMNS.join(", ")} FROM messages
         WHERE id = ? AND conversation_id = (SELECT id FROM c)) m) AS stored,
       ${variantSettingsSql("(SELECT id FROM c)")} AS variant_settings,
       ${REPLY_CONNECTION_SELECT}`;
  // Named by its whole text, the persona rule's included: the shape of both is fixed.
  const result = await runStatement(knex, sql, [
    q.conversationId, q.userId,
    q.historyFrom !== undefined, q.historyFrom ?? null,
    ...q.visiblePersonas.bindings,
    ...q.connection,
    ...reservation.bindings,
    q.historyWindow,
    q.userId,
    q.retryOf ?? null,
  ], preparedOn(q.databaseKind, () => sql));
  const row = result.rows[0]!;
  const conversation = row.conversation as (Omit<ConversationRow, "created_at" | "updated_at"> & { created_at: string; updated_at: string }) | null;
  const stored = row.stored as (Omit<MessageRow, "created_at"> & { created_at: string }) | null;
  return {
    ...(row as unknown as TurnRow),
    conversation: conversation && { ...conversation, created_at: new Date(conversation.created_at), updated_at: new Date(conversation.updated_at) },
    stored: stored && { ...stored, created_at: new Date(stored.created_at) },
  };
}

/** A message of one of `userId`'s conversations by id, on any path (the safety area's reports, issue 41). */
export async function findUserMessage(knex: Knex, userId: string, id: string): Promise<MessageRow | undefined> {
  return knex("messages as m").select([...MESSAGE_COLUMNS].map((column) => `m.${column}`)).where({ "m.id": id, "m.user_id": userId }).first();
}
