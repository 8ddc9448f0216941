import { ApiError } from "../http/errors.ts";
import { requireVisiblePersona } from "../personas/service.ts";
import { personaForConversation } from "../studio/variants.ts";
import { beginReply } from "../replies/engine.ts";
import type { Reply } from "../replies/types.ts";
import type { Services } from "../services.ts";
import { conversationReply, messageRow, storedInput } from "./replying.ts";
import { requireOwnConversation } from "./service.ts";
import { findMessage, type MessageRow } from "./store.ts";

/** The caller's conversation and its persona, which may have been made private since the conversation started. */
async function replyTurn(services: Services, userId: string, conversationId: string, retryOf?: string) {
  const conversation = await requireOwnConversation(services, userId, conversationId);
  const [persona, stored] = await Promise.all([
    requireVisiblePersona(services, userId, conversation.persona_id).catch((error: unknown) => {
      if (error instanceof ApiError && error.status === 404) {
        throw new ApiError(404, "not_found", "The persona of this conversation is no longer available");
      }
      throw error;
    }),
    retryOf ? findMessage(services.db.knex, conversation.id, retryOf) : undefined,
  ]);
  return { conversation, persona: await personaForConversation(services, persona, conversation.id), stored };
}

/**
 * Blocking send: the reply is generated first, then the user message and the reply are stored
 * together. A provider failure stores nothing, gives the quota back and answers 502.
 */
export async function sendMessage(services: Services, userId: string, conversationId: string, content: string): Promise<{ userMessage: MessageRow; reply: MessageRow }> {
  const { conversation, persona } = await replyTurn(services, userId, conversationId);
  const reply = await beginReply(services, { userId, persona, ...conversationReply(services, conversation, persona.id), input: content, mode: "whole" });
  for await (const event of reply) {
    if (event.type === "done") {
      return { userMessage: messageRow(conversation, persona.id, event.input), reply: messageRow(conversation, persona.id, event.reply) };
    }
    if (event.type === "error") throw event.error;
  }
  throw new Error("The reply ended without done or error");
}

/**
 * A streamed reply, ready to run with the quota reserved; errors found before it starts (404, 402)
 * are thrown. The user message is stored while the model is asked and stays if the reply fails.
 * `retryOf` names the user message an earlier failed attempt stored: it is answered again rather
 * than stored twice (when it still exists).
 */
export async function beginStreamedReply(
  services: Services,
  userId: string,
  conversationId: string,
  content: string,
  options: { retryOf?: string | undefined; signal: AbortSignal },
): Promise<Reply> {
  const { conversation, persona, stored } = await replyTurn(services, userId, conversationId, options.retryOf);
  return beginReply(services, {
    userId,
    persona,
    ...conversationReply(services, conversation, persona.id),
    input: stored ? storedInput(stored) : content,
    mode: "stream",
    signal: options.signal,
  });
}

/** The reply an earlier streamed send stored, for a retry that replays it. */
export async function findStoredReply(services: Services, userId: string, conversationId: string, messageId: string): Promise<MessageRow> {
  const conversation = await requireOwnConversation(services, userId, conversationId);
  const reply = await findMessage(services.db.knex, conversation.id, messageId);
  if (!reply) throw new ApiError(404, "not_found", "The reply this Idempotency-Key produced no longer exists");
  return reply;
}
