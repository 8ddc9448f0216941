import { idempotentOutcomeOf } from "../../toolkit/http/idempotency.ts";
import { hasMoreBody, pageWindow } from "../../toolkit/http/paging.ts";
import { HANDLED, type Handler, type HandlerMap } from "../../toolkit/http/router.ts";
import { takeStreamPlace } from "../../toolkit/http/stream-limits.ts";
import { streamedSend } from "./chat/streamed-send.ts";
import { sendMessage } from "./chat/turn.ts";
import {
  createConversation, deleteConversation, getConversation, listConversations, listMessages, searchMessages,
} from "./service.ts";
import { followGeneration } from "./generations/follow.ts";
import { generationHandlers } from "./generations/handlers.ts";
import { replayReply, type StreamOutcome } from "./chat/stream.ts";
import { toConversation, toConversationDetail, toExchange, toMessage, toSearchHit } from "./views.ts";

const conversations_create: Handler<"conversations_create"> = async ({ services, principal, body }) => ({
  status: 201,
  body: toConversation(await createConversation(services, principal.userId, body)),
});

const conversations_list: Handler<"conversations_list"> = async ({ services, principal, query }) => {
  const window = pageWindow(query);
  const page = await listConversations(services, principal.userId, query.persona_id, window);
  return { status: 200, body: hasMoreBody(page, window, toConversation) };
};

const conversations_search: Handler<"conversations_search"> = async ({ services, principal, query }) => {
  const window = pageWindow(query);
  const page = await searchMessages(services, principal.userId, query.q, window);
  return { status: 200, body: hasMoreBody(page, window, toSearchHit) };
};

const conversations_get: Handler<"conversations_get"> = async ({ services, principal, params }) => {
  const { conversation, messages } = await getConversation(services, principal.userId, params.id);
  return { status: 200, body: toConversationDetail(conversation, messages) };
};

const conversations_delete: Handler<"conversations_delete"> = async ({ services, principal, params }) => ({
  status: 200,
  body: { id: await deleteConversation(services, principal.userId, params.id), deleted: true },
});

// Paged by `before` (a message id) as well as offset, so it keeps its own query; one extra row tells has_more.
const conversations_list_messages: Handler<"conversations_list_messages"> = async ({ services, principal, params, query }) => {
  const page = await listMessages(services, principal.userId, params.id, query.before, pageWindow(query));
  return { status: 200, body: { data: page.rows.map(toMessage), has_more: page.hasMore } };
};

const conversations_send_message: Handler<"conversations_send_message"> = async ({ services, principal, params, body }) => ({
  status: 201,
  body: toExchange(await sendMessage(services, principal.userId, params.id, body.content)),
});

/**
 * Streamed send: what it answers (a replay, or a generation to follow) is the service's decision
 * (chat/streamed-send.ts); this writes it as SSE. Errors found before the stream starts are JSON; a
 * client that leaves stops following, not the generation.
 */
const conversations_stream_message: Handler<"conversations_stream_message"> = async ({ services, principal, params, body, req, res, log }) => {
  takeStreamPlace(services, res, principal.userId);
  const send = await streamedSend(services, {
    userId: principal.userId,
    conversationId: params.id,
    content: body.content,
    key: idempotentOutcomeOf<StreamOutcome>(req),
    log,
  });
  if (send.kind === "replay") replayReply(res, send.reply, send.usage, services.config.streamKeepAliveMs);
  else await followGeneration(services, res, send.generation, 0, send.live);
  return HANDLED;
};

export const handlers = {
  conversations_create,
  conversations_list,
  conversations_search,
  conversations_get,
  conversations_delete,
  conversations_list_messages,
  conversations_send_message,
  conversations_stream_message,
  ...generationHandlers,
} satisfies Partial<HandlerMap>;
