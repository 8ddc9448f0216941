import { v7 as uuidv7 } from "uuid";
import { recordEvent } from "../events/outbox.ts";
import { notFound } from "../http/errors.ts";
import { requireVisiblePersona } from "../personas/service.ts";
import type { Services } from "../services.ts";
import { renderHighlight, START_MARK, STOP_MARK } from "./highlight.ts";
import {
  deleteUserConversation, findMessage, findUserConversation, insertConversation, listUserConversations, pageMessages,
  recentMessages, searchUserMessages, type ConversationRow,
} from "./store.ts";
import { toConversation, toMessage } from "./views.ts";
import { isUuid } from "../http/text.ts";

/** Messages embedded in a single-conversation read (DECISIONS: the 50 most recent, oldest first). */
export const EMBEDDED_MESSAGES = 50;

/** The caller's conversation; another user's, an unknown id or a malformed one are all 404. */
export async function requireOwnConversation(services: Services, userId: string, id: string): Promise<ConversationRow> {
  const row = isUuid(id) ? await findUserConversation(services.db.knex, userId, id) : undefined;
  if (!row) throw notFound("Conversation");
  return row;
}

export async function createConversation(services: Services, userId: string, input: { persona_id: string; title?: string }) {
  const persona = await requireVisiblePersona(services, userId, input.persona_id);
  const now = services.now();
  const row = await services.db.knex.transaction(async (trx) => {
    const inserted = await insertConversation(trx, {
      id: uuidv7(),
      user_id: userId,
      persona_id: persona.id,
      title: input.title ?? null,
      message_count: 0,
      created_at: now,
      updated_at: now,
    });
    await recordEvent(trx, {
      userId,
      type: "conversation.created",
      data: { conversation_id: inserted.id, persona_id: persona.id, title: inserted.title },
      at: now,
    });
    return inserted;
  });
  return toConversation(row);
}

export async function listConversations(services: Services, userId: string, query: { persona_id?: string; limit?: number; offset?: number }) {
  const limit = query.limit ?? 20;
  const offset = query.offset ?? 0;
  const { rows, total } = await listUserConversations(services.db.knex, userId, { personaId: query.persona_id, limit, offset });
  return { data: rows.map(toConversation), has_more: offset + rows.length < total, total };
}

export async function getConversation(services: Services, userId: string, id: string) {
  const row = await requireOwnConversation(services, userId, id);
  const messages = await recentMessages(services.db.knex, row.id, EMBEDDED_MESSAGES);
  return { ...toConversation(row), messages: messages.reverse().map(toMessage) };
}

export async function deleteConversation(services: Services, userId: string, id: string) {
  const row = await requireOwnConversation(services, userId, id);
  if (!(await deleteUserConversation(services.db.knex, userId, row.id))) throw notFound("Conversation");
  return { id: row.id, deleted: true as const };
}

export async function listMessages(services: Services, userId: string, id: string, query: { limit?: number; offset?: number; before?: string }) {
  const conversation = await requireOwnConversation(services, userId, id);
  let before;
  if (query.before !== undefined) {
    before = isUuid(query.before) ? await findMessage(services.db.knex, conversation.id, query.before) : undefined;
    if (!before) throw notFound("Message given in `before`");
  }
  const { rows, hasMore } = await pageMessages(services.db.knex, conversation.id, { before, limit: query.limit ?? 20, offset: query.offset ?? 0 });
  return { data: rows.map(toMessage), has_more: hasMore };
}

export async function searchMessages(services: Services, userId: string, query: { q: string; limit?: number; offset?: number }) {
  const limit = query.limit ?? 20;
  const offset = query.offset ?? 0;
  const { rows, total } = await searchUserMessages(services.db.knex, userId, query.q, { limit, offset, startMark: START_MARK, stopMark: STOP_MARK });
  return {
    data: rows.map((row) => ({
      message: toMessage(row),
      conversation: { id: row.conversation_id, title: row.conversation_title },
      highlight: renderHighlight(row.highlight_raw),
    })),
    has_more: offset + rows.length < total,
    total,
  };
}
