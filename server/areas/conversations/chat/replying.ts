import { outboxRecord, recordEvent } from "../../../toolkit/events/outbox.ts";
import { personaKnowledge } from "../../replies/index.ts";
import type { ContextSource, InputRecord, ReplyRecord, ReplySink } from "../../replies/index.ts";
import type { StatementPart } from "../../../toolkit/db/statement-parts.ts";
import type { Services } from "../../../toolkit/services.ts";
import { isGreeting } from "../greetings.ts";
import { insertMessages, recentMessages, type ConversationRow, type MessageRow } from "../store.ts";
import { enqueueSummary, needsSummary } from "./memory-job.ts";
import { enqueueTitle } from "./title-job.ts";

/** Recent messages read to fill the context budget; older ones would not fit any sane budget. */
export const HISTORY_WINDOW = 200;

/** A message's place in the conversation tree: its id and depth. */
export interface TreePoint {
  id: string;
  depth: number;
}

/**
 * Where a reply goes in the conversation tree. By default the new user message follows the active
 * leaf; an edit puts it under an earlier message (`parent`, null for a new first message); a
 * regeneration or a retry answers a stored user message (`answering`).
 */
export interface Placement {
  parent?: TreePoint | null;
  answering?: TreePoint;
  /** The reply's index among the answers to its user message (a regeneration's is past the others). */
  alternativeIndex?: number;
}

/**
 * What another area's statements ride on the statements that store a reply's messages
 * (statement-parts.ts): a streamed reply's generation row with its user message, the generation's
 * last events and end with the reply.
 */
export interface ReplyParts {
  /** Carried by the statement that stores the user message. */
  input?: () => StatementPart | undefined;
  /** Carried by the statement that stores the reply, given the reply and the id of the message it answers. */
  reply?: (reply: ReplyRecord, inputId: string) => Promise<StatementPart | undefined>;
}

/**
 * How a conversation replies through the reply engine: its messages are the context, and the
 * results are stored as its messages with their `message.created` events and counters. `stored`
 * holds the rows as stored, by id.
 */
export function conversationReply(
  services: Services,
  conversation: ConversationRow,
  personaId: string,
  preloaded?: {
    history: Pick<MessageRow, "id" | "role" | "content" | "content_tokens" | "depth">[];
    hasKnowledge: boolean;
    summary?: { content: string } | null;
  },
  placement: Placement = {},
  parts: ReplyParts = {},
): { context: ContextSource; sink: ReplySink; stored: Map<string, MessageRow> } {
  const { knex } = services.db;
  const stored = new Map<string, MessageRow>();
  const inputParent = placement.parent !== undefined
    ? placement.parent
    : conversation.active_message_id === null ? null : { id: conversation.active_message_id, depth: conversation.message_count };
  let replyParent = placement.answering;
  // Whether the conversation had a reply before this one: a title is asked for after the first only.
  let replied = true;
  // The history outgrew what the context keeps: the rolling summary is brought forward after the reply.
  let summarise = false;
  const context: ContextSource = {
    async load(input, signal) {
      // Read with the turn's one statement (chat.ts): retrieval only when the persona has knowledge.
      const knowledge = () => personaKnowledge(services, { userId: conversation.user_id, personaId: conversation.persona_id, input, signal });
      const [history, chunks] = preloaded
        ? [preloaded.history, preloaded.hasKnowledge ? await knowledge() : []]
        : await Promise.all([recentMessages(knex, conversation.id, HISTORY_WINDOW), knowledge()]);
      // The greeting is in the history as its first message (in its place, once), but it is no reply.
      replied = history.some((message) => message.role === "assistant" && !isGreeting(message)) || Boolean(preloaded?.summary);
      summarise = needsSummary(services, history);
      return {
        history: history.map((m) => ({ id: m.id, role: m.role, content: m.content, tokens: m.content_tokens })),
        knowledge: chunks,
        ...(preloaded?.summary ? { summary: preloaded.summary.content } : {}),
      };
    },
  };
  const sink: ReplySink = {
    async store(records) {
      const rows = records.map((record) => {
        const parent = record.role === "user" ? inputParent : (replyParent ?? inputParent);
        const row = messageRow(conversation, personaId, record, parent);
        if (record.role === "user") replyParent = { id: row.id, depth: row.depth };
        return row;
      });
      const at = rows.at(-1)!.created_at;
      const events = rows.map((message) =>
        outboxRecord({
          userId: conversation.user_id,
          type: "message.created",
          data: {
            conversation_id: conversation.id,
            message_id: message.id,
            role: message.role,
            content: message.content,
            persona_id: personaId,
            parent_id: message.parent_id,
            ...(message.role === "assistant" ? { alternative_index: placement.alternativeIndex ?? 0 } : {}),
            ...(message.stopped ? { stopped: true } : {}),
          },
          at,
        }),
      );
      const carried: StatementPart[] = [];
      const inputPart = rows.some((row) => row.role === "user") ? parts.input?.() : undefined;
      if (inputPart) carried.push(inputPart);
      const replyRow = rows.find((row) => row.role === "assistant");
      const replyRecord = records.find((record) => record.role === "assistant") as ReplyRecord | undefined;
      const replyPart = replyRow && replyRecord && replyRow.parent_id ? await parts.reply?.(replyRecord, replyRow.parent_id) : undefined;
      if (replyPart) carried.push(replyPart);
      await insertMessages(knex, conversation, rows, events, at, carried);
      for (const row of rows) stored.set(row.id, row);
      if (summarise && replyRow) await enqueueSummary(services, conversation.id);
      // Only after the first reply: a title job queued again on every reply would restart its backoff.
      if (conversation.title === null && !replied && replyRow) {
        replied = true;
        await enqueueTitle(services, conversation.id);
      }
      // insertMessages ended the reply's quota lease with it.
      return replyRow ? { leaseSettled: true as const } : undefined;
    },
    async failed(error, inputId) {
      await recordEvent(knex, {
        userId: conversation.user_id,
        type: "message.failed",
        data: { conversation_id: conversation.id, persona_id: personaId, user_message_id: inputId, code: error.code, message: error.message },
        at: services.now(),
      });
    },
  };
  return { context, sink, stored };
}

/** The stored row of a message the engine made, placed under `parent` (null: a first message). */
export function messageRow(conversation: ConversationRow, personaId: string, record: InputRecord | ReplyRecord, parent: TreePoint | null): MessageRow {
  const reply = record.role === "assistant" ? record : undefined;
  return {
    id: record.id,
    conversation_id: conversation.id,
    user_id: conversation.user_id,
    persona_id: personaId,
    role: record.role,
    content: record.content,
    content_tokens: record.tokens,
    model: reply?.model ?? null,
    input_tokens: reply?.usage.inputTokens ?? null,
    output_tokens: reply?.usage.outputTokens ?? null,
    citations: reply?.citations ?? null,
    stopped: reply?.stopped === true,
    // Which registry model answered, on whose key, and what it cost (issue 40).
    model_id: reply?.modelId ?? null,
    fallback_from: reply?.fallbackFrom ?? null,
    own_key: reply?.ownKey === true,
    cost_nanos: reply ? reply.costNanos : null,
    created_at: record.createdAt,
    parent_id: parent?.id ?? null,
    depth: (parent?.depth ?? 0) + 1,
  };
}

/** A stored user message as the engine's input, for a retry that answers it again. */
export function storedInput(row: Pick<MessageRow, "id" | "content" | "content_tokens" | "created_at">): InputRecord {
  return { id: row.id, role: "user", content: row.content, tokens: row.content_tokens, createdAt: row.created_at };
}
