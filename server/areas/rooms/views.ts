import type { components } from "../../../generated/openapi.d.ts";
import type { MemberRow, RoomListRow, RoomMessageView, RoomPersonaRow, RoomRow } from "./store.ts";

// Room rows as the contract shows them.

type Schemas = components["schemas"];

const iso = (at: Date) => at.toISOString();

export const toRoomUpdated = (room: RoomRow): Schemas["RoomUpdated"] => ({
  id: room.id,
  name: room.name,
  description: room.description,
  owner_id: room.owner_id,
  is_public: room.is_public,
  reply_mode: room.reply_mode,
  created_at: iso(room.created_at),
  updated_at: iso(room.updated_at),
});

export const toRoomMember = (member: MemberRow): Schemas["RoomMember"] => ({ user_id: member.user_id, role: member.role, joined_at: iso(member.joined_at) });

export const toRoom = (room: RoomRow, members: MemberRow[], personas: RoomPersonaRow[]): Schemas["Room"] => ({
  ...toRoomUpdated(room),
  members: members.map(toRoomMember),
  personas: personas.map((persona) => ({ persona_id: persona.persona_id, name: persona.name, added_at: iso(persona.added_at) })),
  created_at: iso(room.created_at),
  updated_at: iso(room.updated_at),
});

export const toRoomListItem = (room: RoomListRow): Schemas["RoomListItem"] => ({
  id: room.id,
  name: room.name,
  description: room.description,
  is_public: room.is_public,
  member_count: room.member_count,
  persona_count: room.persona_count,
  last_message_at: room.last_message_at ? iso(room.last_message_at) : null,
  created_at: iso(room.created_at),
});

export const toRoomMessage = (message: RoomMessageView): Schemas["RoomMessage"] => ({
  id: message.id,
  room_id: message.room_id,
  sender: {
    type: message.sender_type,
    id: (message.sender_type === "user" ? message.user_id : message.persona_id)!,
    name: message.sender_name,
  },
  content: message.content,
  created_at: iso(message.created_at),
});

export const toPersonaResponse = (message: RoomMessageView): Schemas["RoomPersonaResponse"] => ({
  id: message.id,
  persona_id: message.persona_id!,
  persona_name: message.sender_name,
  content: message.content,
  created_at: iso(message.created_at),
});

export const toMessageSent = (message: RoomMessageView, responses: RoomMessageView[]): Schemas["RoomMessageSent"] => ({
  ...toRoomMessage(message),
  persona_responses: responses.map(toPersonaResponse),
});

export const toMemberAdded = (member: MemberRow): Schemas["RoomMemberAdded"] => ({
  room_id: member.room_id,
  user_id: member.user_id,
  role: "member",
  joined_at: iso(member.joined_at),
});

export const toPersonaAdded = (persona: RoomPersonaRow): Schemas["RoomPersonaAdded"] => ({
  room_id: persona.room_id,
  persona_id: persona.persona_id,
  name: persona.name,
  added_at: iso(persona.added_at),
});
