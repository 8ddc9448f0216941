import { v7 as uuidv7 } from "uuid";
import { recordEvent } from "../../toolkit/events/outbox.ts";
import { notFound } from "../../toolkit/http/error-catalogue.ts";
import type { PageWindow } from "../../toolkit/http/paging.ts";
import { isUuid } from "../../toolkit/http/text.ts";
import { requireVisiblePersona } from "../personas/index.ts";
import { assignConversation } from "../studio/index.ts";
import type { Services } from "../../toolkit/services.ts";
import { greetingRows, greetingsOf, shownMessages } from "./greetings.ts";
import { START_MARK, STOP_MARK } from "./highlight.ts";
import {
  countConversationsOf, deleteUserConversation, findMessage, findUserConversation, insertConversation, insertGreetings, listUserConversations, pageMessages,
  recentMessages, searchUserMessages, type ConversationRow,
  findUserMessage,
  type MessageRow,
} from "./store.ts";

/** Messages embedded in a single-conversation read (DECISIONS: the 50 most recent, oldest first). */
export const EMBEDDED_MESSAGES = 50;

/** The caller's conversation; another user's, an unknown id or a malformed one are all 404. */
export async function requireOwnConversation(services: Services, userId: string, id: string): Promise<ConversationRow> {
  const row = isUuid(id) ? await findUserConversation(services.db.knex, userId, id) : undefined;
  if (!row) throw notFound("Conversation");
  return row;
}

/**
 * Starts the caller's conversation with a persona they may see, opening with its greetings (stored
 * in the same transaction, counted nowhere): 404 for a persona they may not see, 502 when a greeting
 * that had to be generated first could not be; nothing is stored then.
 */
export async function createConversation(services: Services, userId: string, input: { persona_id: string; title?: string }) {
  const persona = await requireVisiblePersona(services, userId, input.persona_id);
  // Before the transaction: a greeting generated now must not hold it open while the model writes.
  const texts = await greetingsOf(services, persona);
  const now = services.now();
  const id = uuidv7();
  const greetings = greetingRows({ id, user_id: userId, persona_id: persona.id }, texts, now);
  return services.db.knex.transaction(async (trx) => {
    const inserted = await insertConversation(trx, {
      id,
      user_id: userId,
      persona_id: persona.id,
      title: input.title ?? null,
      message_count: 0,
      active_message_id: greetings[0]?.id ?? null,
      created_at: now,
      updated_at: now,
    });
    await insertGreetings(trx, greetings);
    // A/B variants: the conversation's variant is picked once, here, and kept for life.
    await assignConversation(trx, inserted);
    await recordEvent(trx, {
      userId,
      type: "conversation.created",
      data: { conversation_id: inserted.id, persona_id: persona.id, title: inserted.title },
      at: now,
    });
    return inserted;
  });
}

/** How many conversations the persona has had, all users together (its public page shows it). */
export async function conversationCount(services: Services, personaId: string): Promise<number> {
  return isUuid(personaId) ? countConversationsOf(services.db.knex, personaId) : 0;
}

export async function listConversations(services: Services, userId: string, personaId: string | undefined, window: PageWindow) {
  return listUserConversations(services.db.knex, userId, personaId, window);
}

/** The conversation and its most recent messages, newest first. */
export async function getConversation(services: Services, userId: string, id: string) {
  const conversation = await requireOwnConversation(services, userId, id);
  return { conversation, messages: await shownMessages(services, userId, await recentMessages(services.db.knex, conversation.id, EMBEDDED_MESSAGES)) };
}

export async function deleteConversation(services: Services, userId: string, id: string): Promise<string> {
  const row = await requireOwnConversation(services, userId, id);
  if (!(await deleteUserConversation(services.db.knex, userId, row.id))) throw notFound("Conversation");
  return row.id;
}

/** A page of the conversation's messages, newest first, optionally only those older than message `before`. */
export async function listMessages(services: Services, userId: string, id: string, before: string | undefined, window: PageWindow) {
  const conversation = await requireOwnConversation(services, userId, id);
  let older;
  if (before !== undefined) {
    older = isUuid(before) ? await findMessage(services.db.knex, conversation.id, before) : undefined;
    if (!older) throw notFound("Message given in `before`");
  }
  const page = await pageMessages(services.db.knex, conversation.id, { before: older, ...window });
  return { ...page, rows: await shownMessages(services, userId, page.rows) };
}

export async function searchMessages(services: Services, userId: string, q: string, window: PageWindow) {
  const page = await searchUserMessages(services.db.knex, userId, q, window, { start: START_MARK, stop: STOP_MARK });
  return { ...page, rows: await shownMessages(services, userId, page.rows) };
}

/** A message of one of the caller's own conversations, by id; undefined otherwise (issue 41: what a user may report). */
export async function findOwnMessage(services: Services, userId: string, messageId: string): Promise<MessageRow | undefined> {
  return isUuid(messageId) ? findUserMessage(services.db.knex, userId, messageId) : undefined;
}
