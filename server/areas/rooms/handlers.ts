import { withDetails } from "../../toolkit/http/error-catalogue.ts";
import { pageBody, pageWindow } from "../../toolkit/http/paging.ts";
import { HANDLED, type Handler, type HandlerMap } from "../../toolkit/http/router.ts";
import { takeStreamPlace } from "../../toolkit/http/stream-limits.ts";
import * as rooms from "./service.ts";
import { streamRoomEvents } from "./stream.ts";
import { toMemberAdded, toMessageSent, toPersonaAdded, toRoom, toRoomListItem, toRoomMessage, toRoomUpdated } from "./views.ts";

const MESSAGE_PAGE_LIMIT = 50;

const rooms_create: Handler<"rooms_create"> = async ({ services, principal, body }) => {
  const { room, members, personas } = await rooms.createRoom(services, principal.userId, body);
  return { status: 201, body: toRoom(room, members, personas) };
};

const rooms_list: Handler<"rooms_list"> = async ({ services, principal, query }) => {
  const window = pageWindow(query);
  return { status: 200, body: pageBody(await rooms.listRooms(services, principal.userId, window), window, toRoomListItem) };
};

const rooms_get: Handler<"rooms_get"> = async ({ services, principal, params }) => {
  const { room, members, personas } = await rooms.getRoom(services, principal.userId, params.id);
  return { status: 200, body: toRoom(room, members, personas) };
};

const rooms_update: Handler<"rooms_update"> = async ({ services, principal, params, body }) => ({
  status: 200,
  body: toRoomUpdated(await rooms.updateRoom(services, principal.userId, params.id, body)),
});

const rooms_delete: Handler<"rooms_delete"> = async ({ services, principal, params }) => ({
  status: 200,
  body: { id: await rooms.deleteRoom(services, principal.userId, params.id), deleted: true },
});

const rooms_list_messages: Handler<"rooms_list_messages"> = async ({ services, principal, params, query }) => {
  const window = pageWindow(query, MESSAGE_PAGE_LIMIT);
  const page = await rooms.listMessages(services, principal.userId, params.id, query.before, window);
  return { status: 200, body: pageBody(page, window, toRoomMessage) };
};

const rooms_send_message: Handler<"rooms_send_message"> = async ({ services, principal, params, body }) => {
  const { message, responses, failure } = await rooms.sendMessage(services, principal.userId, params.id, body.content);
  const sent = toMessageSent(message, responses);
  // The message and the replies made before the failure are stored; the error carries them.
  if (failure) throw withDetails(failure, { message: sent });
  return { status: 201, body: sent };
};

const rooms_add_member: Handler<"rooms_add_member"> = async ({ services, principal, params, body }) => ({
  status: 200,
  body: toMemberAdded(await rooms.addMember(services, principal.userId, params.id, body.user_id)),
});

const rooms_remove_member: Handler<"rooms_remove_member"> = async ({ services, principal, params }) => ({
  status: 200,
  body: { deleted: true, room_id: await rooms.removeMember(services, principal.userId, params.id, params.user_id), user_id: params.user_id },
});

const rooms_add_persona: Handler<"rooms_add_persona"> = async ({ services, principal, params, body }) => ({
  status: 200,
  body: toPersonaAdded(await rooms.addPersona(services, principal.userId, params.id, body.persona_id)),
});

const rooms_remove_persona: Handler<"rooms_remove_persona"> = async ({ services, principal, params }) => ({
  status: 200,
  body: { deleted: true, room_id: await rooms.removePersona(services, principal.userId, params.id, params.persona_id), persona_id: params.persona_id },
});

/** The room's live events as SSE; errors found before the stream starts are JSON. */
const rooms_events: Handler<"rooms_events"> = async ({ services, principal, params, req, res }) => {
  takeStreamPlace(services, res, principal.userId);
  const opened = await rooms.openEvents(services, principal.userId, params.id, req.get("last-event-id"));
  await streamRoomEvents(services, res, { ...opened, userId: principal.userId });
  return HANDLED;
};

export const handlers = {
  rooms_create,
  rooms_list,
  rooms_get,
  rooms_update,
  rooms_delete,
  rooms_list_messages,
  rooms_send_message,
  rooms_add_member,
  rooms_remove_member,
  rooms_add_persona,
  rooms_remove_persona,
  rooms_events,
} satisfies Partial<HandlerMap>;
