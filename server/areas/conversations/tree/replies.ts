import { conflict, notFound } from "../../../toolkit/http/error-catalogue.ts";
import { isUuid } from "../../../toolkit/http/text.ts";
import { beginReply, requireInputFits } from "../../replies/index.ts";
import type { Reply } from "../../replies/index.ts";
import type { Services } from "../../../toolkit/services.ts";
import { replyTurn } from "../chat/turn.ts";
import { conversationReply, storedInput, type Placement } from "../chat/replying.ts";
import { isGreeting } from "../greetings.ts";
import { requireOwnConversation } from "../service.ts";
import { hasRunningGeneration } from "../generations/store.ts";
import { findMessage, type ConversationRow, type MessageRow } from "../store.ts";
import { releaseReplyLease, takeReplyLease } from "./store.ts";

/** A reply that adds to the tree (a regeneration or an edit), ready to run; `finish` ends its lease. */
export interface TreeReply {
  reply: Reply;
  stored: Map<string, MessageRow>;
  conversationId: string;
  finish(): Promise<void>;
}

async function requireMessage(services: Services, conversation: ConversationRow, messageId: string): Promise<MessageRow> {
  const message = isUuid(messageId) ? await findMessage(services.db.knex, conversation.id, messageId) : undefined;
  if (!message) throw notFound("Message");
  return message;
}

const BUSY = "A reply of this conversation is being generated; try again when it is done";

/**
 * Runs `start` holding the conversation's reply lease (a timestamp on the conversation, ending by
 * itself): a second regeneration or edit while one is answered is a 409, and so is one while a
 * streamed send of the conversation is still generating (its generation is running and leased).
 */
async function withLease(services: Services, conversationId: string, start: () => Promise<Omit<TreeReply, "finish">>): Promise<TreeReply> {
  const { knex } = services.db;
  const { timeoutMs, maxRetries } = services.config.llm;
  const now = services.now();
  const until = new Date(now.getTime() + timeoutMs * (maxRetries + 1) + 60_000);
  if (!(await takeReplyLease(knex, conversationId, now, until))) {
    throw conflict(BUSY);
  }
  const finish = () => releaseReplyLease(knex, conversationId, until).catch((error: unknown) => services.log.error({ err: error }, "could not release a reply lease"));
  try {
    if (await hasRunningGeneration(knex, conversationId)) throw conflict(BUSY);
    return { ...(await start()), finish };
  } catch (error) {
    await finish();
    throw error;
  }
}

/**
 * A new alternative of the active path's last reply: the persona answers the same user message
 * from the same context again. Refused (409) for any other message, and (404) for one the caller
 * may not see; 402 before anything is stored when the quota is used up.
 */
export async function beginRegeneration(
  services: Services,
  userId: string,
  conversationId: string,
  messageId: string,
  options: { mode: "whole" | "stream"; stop?: AbortSignal },
): Promise<TreeReply> {
  const conversation = await requireOwnConversation(services, userId, conversationId);
  const old = await requireMessage(services, conversation, messageId);
  if (isGreeting(old)) throw conflict("A greeting is not a reply: choose among its alternatives with select");
  if (old.role !== "assistant" || old.id !== conversation.active_message_id) {
    throw conflict("Only the last reply of the active branch can be regenerated");
  }
  const question = old.parent_id === null ? undefined : await findMessage(services.db.knex, conversation.id, old.parent_id);
  if (!question || question.role !== "user") throw conflict("This reply answers no user message");
  // Stored before the limit was lowered, or longer than it: refused before anything is reserved.
  requireInputFits(services.config.llm, question.content, undefined, "The message this reply answers");
  return withLease(services, conversation.id, async () => {
    const turn = await replyTurn(services, userId, conversation.id, question.id, question.id);
    const placement: Placement = { answering: { id: question.id, depth: question.depth }, alternativeIndex: old.alternative_count ?? 1 };
    const { context, sink, stored } = conversationReply(services, turn.conversation, turn.persona.id, turn.preloaded, placement);
    const reply = await beginReply(services, {
      userId,
      persona: turn.persona,
      context,
      sink,
      input: storedInput(question),
      mode: options.mode,
      reserved: turn.reserved,
      card: turn.card,
      // A streamed tree reply runs as a generation: no client signal, only a stop ends it early.
      ...(options.stop ? { stop: options.stop } : {}),
    });
    return { reply, stored, conversationId: conversation.id };
  });
}

/**
 * A new version of an earlier user message, answered: a sibling of the edited message (same
 * parent) and the persona's reply to it from the context before it, on a new branch that becomes
 * active. 409 for an assistant message.
 */
export async function beginEdit(
  services: Services,
  userId: string,
  conversationId: string,
  messageId: string,
  content: string,
  options: { mode: "whole" | "stream"; stop?: AbortSignal },
): Promise<TreeReply> {
  requireInputFits(services.config.llm, content, "/body/content");
  const conversation = await requireOwnConversation(services, userId, conversationId);
  const edited = await requireMessage(services, conversation, messageId);
  if (edited.role !== "user") throw conflict("Only user messages can be edited");
  const parent = edited.parent_id === null ? null : await findMessage(services.db.knex, conversation.id, edited.parent_id);
  return withLease(services, conversation.id, async () => {
    const turn = await replyTurn(services, userId, conversation.id, undefined, parent?.id ?? null);
    const placement: Placement = { parent: parent ? { id: parent.id, depth: parent.depth } : null };
    const { context, sink, stored } = conversationReply(services, turn.conversation, turn.persona.id, turn.preloaded, placement);
    const reply = await beginReply(services, {
      userId,
      persona: turn.persona,
      context,
      sink,
      input: content,
      mode: options.mode,
      reserved: turn.reserved,
      card: turn.card,
      // A streamed tree reply runs as a generation: no client signal, only a stop ends it early.
      ...(options.stop ? { stop: options.stop } : {}),
    });
    return { reply, stored, conversationId: conversation.id };
  });
}

/** Runs a whole (blocking) tree reply to its end: the stored rows, read back with their alternatives. */
export async function runWhole(services: Services, started: TreeReply): Promise<{ userMessage: MessageRow; reply: MessageRow }> {
  try {
    for await (const event of started.reply) {
      if (event.type === "error") throw event.error;
      if (event.type === "done") {
        const { knex } = services.db;
        const [userMessage, reply] = await Promise.all([
          findMessage(knex, started.conversationId, event.input.id),
          findMessage(knex, started.conversationId, event.reply.id),
        ]);
        return { userMessage: userMessage ?? started.stored.get(event.input.id)!, reply: reply ?? started.stored.get(event.reply.id)! };
      }
    }
    throw new Error("The reply ended without done or error");
  } finally {
    await started.finish();
  }
}
