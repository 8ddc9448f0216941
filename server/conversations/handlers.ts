import { principalOf } from "../http/principal.ts";
import { HANDLED, type Handler } from "../http/router.ts";
import { sendMessage, streamMessage } from "./chat.ts";
import {
  createConversation, deleteConversation, getConversation, listConversations, listMessages, searchMessages,
} from "./service.ts";

export const conversations_create: Handler<"conversations_create"> = async ({ services, req, body }) => ({
  status: 201,
  body: await createConversation(services, principalOf(req).userId, body),
});

export const conversations_list: Handler<"conversations_list"> = async ({ services, req, query }) => ({
  status: 200,
  body: await listConversations(services, principalOf(req).userId, query),
});

export const conversations_search: Handler<"conversations_search"> = async ({ services, req, query }) => ({
  status: 200,
  body: await searchMessages(services, principalOf(req).userId, query),
});

export const conversations_get: Handler<"conversations_get"> = async ({ services, req, params }) => ({
  status: 200,
  body: await getConversation(services, principalOf(req).userId, params.id),
});

export const conversations_delete: Handler<"conversations_delete"> = async ({ services, req, params }) => ({
  status: 200,
  body: await deleteConversation(services, principalOf(req).userId, params.id),
});

export const conversations_list_messages: Handler<"conversations_list_messages"> = async ({ services, req, params, query }) => ({
  status: 200,
  body: await listMessages(services, principalOf(req).userId, params.id, query),
});

export const conversations_send_message: Handler<"conversations_send_message"> = async ({ services, req, params, body }) => ({
  status: 201,
  body: await sendMessage(services, principalOf(req).userId, params.id, body.content),
});

export const conversations_stream_message: Handler<"conversations_stream_message"> = async ({ services, req, params, body }) => {
  await streamMessage(services, req, principalOf(req).userId, params.id, body.content);
  return HANDLED;
};
