import { outboxRow, recordEvent } from "../events/outbox.ts";
import { personaKnowledge } from "../replies/knowledge.ts";
import type { ContextSource, InputRecord, ReplyRecord, ReplySink } from "../replies/types.ts";
import type { Services } from "../services.ts";
import { insertMessages, recentMessages, type ConversationRow, type MessageRow } from "./store.ts";
import { enqueueTitle } from "./title-job.ts";

/** Recent messages read to fill the context budget; older ones would not fit any sane budget. */
export const HISTORY_WINDOW = 200;

/**
 * How a conversation replies through the reply engine: its messages are the context, and the
 * results are stored as its messages with their `message.created` events and counters.
 */
export function conversationReply(
  services: Services,
  conversation: ConversationRow,
  personaId: string,
  preloaded?: { history: Pick<MessageRow, "id" | "role" | "content" | "content_tokens">[]; hasKnowledge: boolean },
): { context: ContextSource; sink: ReplySink } {
  const { knex } = services.db;
  // Whether the conversation had a reply before this one: a title is asked for after the first only.
  let replied = true;
  const context: ContextSource = {
    async load(input, signal) {
      // Read with the turn's one statement (chat.ts): retrieval only when the persona has knowledge.
      const knowledge = () => personaKnowledge(services, { userId: conversation.user_id, personaId: conversation.persona_id, input, signal });
      const [history, chunks] = preloaded
        ? [preloaded.history, preloaded.hasKnowledge ? await knowledge() : []]
        : await Promise.all([recentMessages(knex, conversation.id, HISTORY_WINDOW), knowledge()]);
      replied = history.some((message) => message.role === "assistant");
      return { history: history.map((m) => ({ id: m.id, role: m.role, content: m.content, tokens: m.content_tokens })), knowledge: chunks };
    },
  };
  const sink: ReplySink = {
    async store(records) {
      const rows = records.map((record) => messageRow(conversation, personaId, record));
      const at = rows.at(-1)!.created_at;
      const events = rows.map((message) =>
        outboxRow({
          userId: conversation.user_id,
          type: "message.created",
          data: {
            conversation_id: conversation.id, message_id: message.id, role: message.role, content: message.content, persona_id: personaId,
            ...(message.stopped ? { stopped: true } : {}),
          },
          at,
        }),
      );
      await insertMessages(knex, conversation, rows, events, at);
      // Only after the first reply: a title job queued again on every reply would restart its backoff.
      if (conversation.title === null && !replied && rows.some((message) => message.role === "assistant")) {
        replied = true;
        await enqueueTitle(services, conversation.id);
      }
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
  return { context, sink };
}

/** The stored row of a message the engine made. */
export function messageRow(conversation: ConversationRow, personaId: string, record: InputRecord | ReplyRecord): MessageRow {
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
    created_at: record.createdAt,
  };
}

/** A stored user message as the engine's input, for a retry that answers it again. */
export function storedInput(row: MessageRow): InputRecord {
  return { id: row.id, role: "user", content: row.content, tokens: row.content_tokens, createdAt: row.created_at };
}
