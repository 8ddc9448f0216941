import { heldMessage, messageQuota, planLimitExceeded } from "../../../quota/usage.ts";
import { cardContextFromRow } from "../../cards/index.ts";
import { notFound, notFoundExplained } from "../../../toolkit/http/error-catalogue.ts";
import { isUuid } from "../../../toolkit/http/text.ts";
import { settingsOver, visiblePersonasSql } from "../../personas/index.ts";
import { openConnection, replyConnectionBindings } from "../../models/index.ts";
import { beginReply, requireInputFits, unreservedMessage } from "../../replies/index.ts";
import type { Reply } from "../../replies/index.ts";
import type { Services } from "../../../toolkit/services.ts";
import { conversationReply, HISTORY_WINDOW, storedInput, type ReplyParts } from "./replying.ts";
import { requireOwnConversation } from "../service.ts";
import { findMessage, loadTurn, type MessageRow } from "../store.ts";

/**
 * The caller's conversation, its persona (which may have been made private since the conversation
 * started), the history window and one message of the monthly quota, in one round trip
 * (`loadTurn`). Errors come out as before: 404 for the conversation, 404 for a persona no longer
 * available, then 402, and nothing stays reserved after any of them.
 */
export async function replyTurn(services: Services, userId: string, conversationId: string, retryOf?: string, historyFrom?: string | null) {
  if (!isUuid(conversationId)) throw notFound("Conversation");
  const quota = messageQuota(services, userId);
  const turn = await loadTurn(services.db.knex, {
    userId,
    conversationId,
    visiblePersonas: visiblePersonasSql(services, userId),
    historyWindow: HISTORY_WINDOW,
    retryOf: retryOf !== undefined && isUuid(retryOf) ? retryOf : undefined,
    historyFrom,
    quota,
    databaseKind: services.db.kind,
    connection: replyConnectionBindings(services, userId),
  });
  const { conversation } = turn;
  if (!conversation) throw notFound("Conversation");
  if (!turn.persona) throw notFoundExplained("The persona of this conversation is no longer available");
  if (turn.reserved === null && !turn.quota_exempt) throw planLimitExceeded("messagesPerMonth", turn.plan, turn.messages_limit, turn.used);
  // The persona as this conversation's replies see it: its A/B variant's instructions and settings
  // over its own, on the user's own provider connection when one applies (issue 40).
  const persona = {
    ...turn.persona,
    ...(turn.variant_instructions === null ? {} : { instructions: turn.variant_instructions }),
    model_settings: settingsOver(turn.persona.model_settings, turn.variant_settings),
    connection: turn.connection ? await openConnection(services, turn.connection) : undefined,
  };
  return {
    conversation,
    persona,
    stored: turn.stored ?? undefined,
    // A reply on the user's own key that the quota exempts reserved nothing: none is given back.
    reserved: turn.reserved === null ? unreservedMessage(quota.lease.replyId) : heldMessage(services, userId, turn.period_start, quota.lease.replyId),
    preloaded: { history: turn.history, hasKnowledge: turn.has_knowledge, summary: turn.summary },
    // The persona's card context, read by the turn's statement: a send is one round trip before the model.
    card: Promise.resolve(cardContextFromRow(turn.card)),
  };
}

/**
 * Blocking send: the reply is generated first, then the user message and the reply are stored
 * together. A provider failure stores nothing, gives the quota back and answers 502.
 */
export async function sendMessage(services: Services, userId: string, conversationId: string, content: string): Promise<{ userMessage: MessageRow; reply: MessageRow }> {
  // A message that cannot fit the context beside the instructions: 400 before anything is reserved.
  requireInputFits(services.config.llm, content, "/body/content");
  const { conversation, persona, reserved, preloaded, card } = await replyTurn(services, userId, conversationId);
  const { context, sink, stored } = conversationReply(services, conversation, persona.id, preloaded);
  const reply = await beginReply(services, { userId, persona, context, sink, input: content, mode: "whole", reserved, card });
  for await (const event of reply) {
    if (event.type === "done") return { userMessage: stored.get(event.input.id)!, reply: stored.get(event.reply.id)! };
    if (event.type === "error") throw event.error;
  }
  throw new Error("The reply ended without done or error");
}

/**
 * A streamed reply, ready to run with the quota reserved; errors found before it starts (404, 402)
 * are thrown. `stop` ends it early, keeping what was generated. The user message is stored while the model is asked and stays if the reply fails.
 * `retryOf` names the user message an earlier failed attempt stored: it is answered again rather
 * than stored twice (when it still exists).
 */
export async function beginStreamedReply(
  services: Services,
  userId: string,
  conversationId: string,
  content: string,
  options: { retryOf?: string | undefined; stop: AbortSignal; userName?: string | undefined; parts?: ReplyParts },
): Promise<Reply> {
  requireInputFits(services.config.llm, content, "/body/content");
  const { conversation, persona, stored, reserved, preloaded, card } = await replyTurn(services, userId, conversationId, options.retryOf);
  return beginReply(services, {
    userId,
    persona,
    card,
    ...conversationReply(services, conversation, persona.id, preloaded, stored ? { answering: { id: stored.id, depth: stored.depth } } : {}, options.parts),
    input: stored ? storedInput(stored) : content,
    mode: "stream",
    // No client signal: the generation outlives the request; only a stop ends it early.
    stop: options.stop,
    reserved,
    userName: options.userName,
  });
}

/** The reply an earlier streamed send stored, for a retry that replays it. */
export async function findStoredReply(services: Services, userId: string, conversationId: string, messageId: string): Promise<MessageRow> {
  const conversation = await requireOwnConversation(services, userId, conversationId);
  const reply = await findMessage(services.db.knex, conversation.id, messageId);
  if (!reply) throw notFoundExplained("The reply this Idempotency-Key produced no longer exists");
  return reply;
}
