import type { Knex } from "knex";
import { v7 as uuidv7 } from "uuid";
import type { components } from "../../../generated/openapi.d.ts";
import { isLiveUser } from "../auth/index.ts";
import { conflict, forbidden, invalidField, notFound } from "../../toolkit/http/error-catalogue.ts";
import type { ApiError } from "../../toolkit/http/errors.ts";
import type { PageWindow } from "../../toolkit/http/paging.ts";
import { isUuid } from "../../toolkit/http/text.ts";
import { screen } from "../../toolkit/moderation.ts";
import { requireVisiblePersona } from "../personas/index.ts";
import { countTokens } from "../../toolkit/providers/llm/tokens.ts";
import { beginReply, requireInputFits } from "../replies/index.ts";
import type { InputRecord, Reply } from "../replies/index.ts";
import type { Services } from "../../toolkit/services.ts";
import { announceRoomDeleted, deltaRelay, recordRoomEvents } from "./events.ts";
import { attributed, roomReply, storeRoomMessages } from "./replying.ts";
import { MAX_REPLIES, mentioned, mostRelevant } from "./responders.ts";
import { toRoomMember } from "./views.ts";
import {
  deleteMember,
  deleteRoom as deleteRoomRow,
  deleteRoomPersona,
  findRoomWithRole,
  findRoomPersona,
  insertMember,
  insertRoom,
  insertRoomPersona,
  lastRoomEventId,
  lastSpoken,
  listMembers,
  listRoomMessages,
  listRoomPersonas,
  listRoomsOf,
  lockRoom,
  findRoomMessage,
  setRoomMessageTakenDown,
  updateRoom as updateRoomRow,
  userName,
  type MemberRow,
  type NewRoomEvent,
  type RoomMessageRow,
  type RoomMessageView,
  type RoomPersonaRow,
  type RoomRole,
  type RoomRow,
} from "./store.ts";

export type { MemberRow, RoomMessageView, RoomPersonaRow, RoomRow } from "./store.ts";

type Schemas = components["schemas"];

/** Personas one room holds at most: as many as a room may be created with. */
export const ROOM_PERSONA_LIMIT = 10;

/** A room the caller can see, with the caller's role in it (none: a public room's onlooker). */
interface Access {
  room: RoomRow;
  role: RoomRole | undefined;
}

/** The room when the caller may see it: a member, or anyone for a public room. Else 404. */
async function requireVisibleRoom(services: Services, userId: string, roomId: string): Promise<Access> {
  const found = isUuid(roomId) ? await findRoomWithRole(services.db.knex, roomId, userId) : undefined;
  if (!found || (!found.role && !found.room.is_public)) throw notFound("Room");
  return found;
}

/** Only members act in a room; an onlooker of a public room may only read it (403). */
async function requireMember(services: Services, userId: string, roomId: string): Promise<Access & { role: RoomRole }> {
  const access = await requireVisibleRoom(services, userId, roomId);
  if (!access.role) throw forbidden("Only the room's members may do this");
  return access as Access & { role: RoomRole };
}

/**
 * Runs `change` in a transaction that holds the room's lock, storing and announcing the events it
 * answers with it. 404 when the room was deleted meanwhile.
 */
async function changeRoom<T>(services: Services, roomId: string, change: (trx: Knex.Transaction) => Promise<{ result: T; events: NewRoomEvent[] }>): Promise<T> {
  return services.db.knex.transaction(async (trx) => {
    if (!(await lockRoom(trx, roomId))) throw notFound("Room");
    const { result, events } = await change(trx);
    await recordRoomEvents(services, trx, roomId, events);
    return result;
  });
}

async function requireOwner(services: Services, userId: string, roomId: string): Promise<Access> {
  const access = await requireVisibleRoom(services, userId, roomId);
  if (access.role !== "owner") throw forbidden("Only the room's owner may do this");
  return access;
}

export interface RoomDetail {
  room: RoomRow;
  members: MemberRow[];
  personas: RoomPersonaRow[];
}

async function detail(services: Services, room: RoomRow): Promise<RoomDetail> {
  const { knex } = services.db;
  const [members, personas] = await Promise.all([listMembers(knex, room.id), listRoomPersonas(knex, room.id)]);
  return { room, members, personas };
}

/** Creates a room owned by the caller, with the listed personas; one persona the caller may not use and nothing is created. */
export async function createRoom(services: Services, userId: string, input: Schemas["RoomCreate"]): Promise<RoomDetail> {
  const personaIds = input.persona_ids ?? [];
  if (new Set(personaIds.map((id) => id.toLowerCase())).size !== personaIds.length) {
    throw invalidField("/body/persona_ids", "must NOT have duplicate items", "/body/persona_ids must not contain duplicates");
  }
  const personas = [];
  for (const id of personaIds) personas.push(await requireVisiblePersona(services, userId, id));
  const now = services.now();
  const room: RoomRow = {
    id: uuidv7(),
    owner_id: userId,
    name: input.name,
    description: input.description ?? "",
    is_public: input.is_public ?? false,
    reply_mode: input.reply_mode ?? "natural",
    last_message_at: null,
    created_at: now,
    updated_at: now,
  };
  await insertRoom(
    services.db.knex,
    room,
    personas.map((persona) => ({ persona_id: persona.id, added_by: userId, added_at: now })),
  );
  return detail(services, room);
}

export async function listRooms(services: Services, userId: string, window: PageWindow) {
  return listRoomsOf(services.db.knex, userId, window);
}

export async function getRoom(services: Services, userId: string, roomId: string): Promise<RoomDetail> {
  return detail(services, (await requireVisibleRoom(services, userId, roomId)).room);
}

export async function updateRoom(services: Services, userId: string, roomId: string, input: Schemas["RoomUpdate"]): Promise<RoomRow> {
  const { room } = await requireOwner(services, userId, roomId);
  const changes = {
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.description !== undefined ? { description: input.description } : {}),
    ...(input.is_public !== undefined ? { is_public: input.is_public } : {}),
    ...(input.reply_mode !== undefined ? { reply_mode: input.reply_mode } : {}),
  };
  return updateRoomRow(services.db.knex, room.id, changes, services.now());
}

export async function deleteRoom(services: Services, userId: string, roomId: string): Promise<string> {
  const { room } = await requireOwner(services, userId, roomId);
  await services.db.knex.transaction(async (trx) => {
    await deleteRoomRow(trx, room.id);
    await announceRoomDeleted(services, trx, room.id);
  });
  return room.id;
}

export async function listMessages(services: Services, userId: string, roomId: string, before: string | undefined, window: PageWindow) {
  const { room } = await requireVisibleRoom(services, userId, roomId);
  return listRoomMessages(services.db.knex, room.id, userId, before === undefined ? undefined : new Date(before), window);
}

/** The personas that answer `content` under the room's reply mode, in the order they answer. */
function responders(room: RoomRow, content: string, personas: RoomPersonaRow[], spoken: Map<string, Date>): RoomPersonaRow[] {
  if (personas.length === 0) return [];
  if (room.reply_mode === "all") return personas.slice(0, MAX_REPLIES);
  const named = mentioned(content, personas);
  if (named.length > 0 || room.reply_mode === "mentions_only") return named;
  const chosen = mostRelevant(content, personas, spoken);
  return chosen ? [chosen] : [];
}

export interface SendResult {
  message: RoomMessageView;
  responses: RoomMessageView[];
  /** Why the replies stopped early (the model provider failed); the message and `responses` are stored. */
  failure: ApiError | undefined;
}

/**
 * Posts the caller's message and has the answering personas reply one after another, each seeing
 * the replies before its own. Every reply is one message of the sender's quota: when the first
 * cannot be reserved (402) nothing is stored; when a later one cannot, the replies so far are the
 * answer. A failing model stops the round: the message and the replies so far stay, and `failure`
 * says why.
 */
export async function sendMessage(services: Services, userId: string, roomId: string, content: string): Promise<SendResult> {
  const { knex } = services.db;
  // What choosing the responders needs is read alongside the access check: a send waits for one
  // round trip, not two, before the model is asked (a refused caller learns nothing from it).
  const roomKey = isUuid(roomId) ? roomId : undefined;
  const [{ room }, personas, spoken, senderName] = await Promise.all([
    requireMember(services, userId, roomId),
    roomKey ? listRoomPersonas(knex, roomKey) : [],
    roomKey ? lastSpoken(knex, roomKey) : new Map<string, Date>(),
    userName(knex, userId),
  ]);
  // Checked before it is stored (issue 41): a room message shows the moment it is sent, so a
  // flagged one is refused, never held.
  await screen(services, { label: "The message", texts: [content], holdable: false });
  const answering = responders(room, content, personas, spoken);
  const now = services.now();
  const row: RoomMessageRow = {
    id: uuidv7(),
    room_id: room.id,
    sender_type: "user",
    user_id: userId,
    persona_id: null,
    persona_name: null,
    content,
    content_tokens: countTokens(content),
    model: null,
    input_tokens: null,
    output_tokens: null,
    created_at: now,
  };
  const message: RoomMessageView = { ...row, sender_name: senderName };
  // The engine sees the message as stored already (the room stores it once for every persona), and
  // with its author's name, as a persona reads everyone in the room.
  const said = attributed(senderName, content);
  // What the answering personas read (the message with its author's name) must fit their context:
  // 400 before anything is reserved or stored. A message no persona answers is never a model's input.
  if (answering.length > 0) requireInputFits(services.config.llm, said, "/body/content", "The message with its author's name");
  const input: InputRecord = { id: row.id, role: "user", content: said, tokens: countTokens(said), createdAt: now };

  const responses: RoomMessageView[] = [];
  let stored = false;
  let failure: ApiError | undefined;
  for (const persona of answering.slice(0, MAX_REPLIES)) {
    // The reply is streamed so that the room's subscribers can watch it being written.
    const relay = deltaRelay(services, room.id, { persona_id: persona.persona_id, persona_name: persona.name, reply_to: row.id });
    const { context, sink, stored: written } = roomReply(services, room.id, persona, userId, relay.flush);
    let reply: Reply;
    try {
      reply = await beginReply(services, {
        userId,
        persona: { id: persona.persona_id, name: persona.name, model: persona.model, instructions: persona.instructions },
        // `{{user}}` in a room is the member the persona is answering.
        userName: senderName,
        context,
        input,
        sink,
        mode: "stream",
      });
    } catch (error) {
      if (!stored) throw error;
      // The quota ran out part way: the replies made so far are the answer.
      services.log.info({ roomId: room.id, err: error }, "a room reply was not started");
      break;
    }
    if (!stored) {
      await storeRoomMessages(services, [message]).catch(async (error: unknown) => {
        await reply.cancel();
        throw error;
      });
      stored = true;
    }
    for await (const event of reply) {
      if (event.type === "delta") relay.push(event.content);
      else if (event.type === "error") failure = event.error;
    }
    await relay.flush();
    responses.push(...written);
    if (failure) break;
  }
  if (!stored) await storeRoomMessages(services, [message]);
  return { message, responses, failure };
}

/** Adds a user to the room (owner only). */
export async function addMember(services: Services, userId: string, roomId: string, memberId: string): Promise<MemberRow> {
  const { room } = await requireOwner(services, userId, roomId);
  if (!isUuid(memberId) || !(await isLiveUser(services, memberId))) throw notFound("User");
  const member: MemberRow = { room_id: room.id, user_id: memberId, role: "member", joined_at: services.now() };
  return changeRoom(services, room.id, async (trx) => {
    if (!(await insertMember(trx, member))) throw conflict("The user is already a member of the room");
    return { result: member, events: [{ type: "member_joined", data: toRoomMember(member), user_id: member.user_id }] };
  });
}

/** The owner removes a member; a member removes itself (leaves). The owner cannot leave its own room. */
export async function removeMember(services: Services, userId: string, roomId: string, memberId: string): Promise<string> {
  const { room, role } = await requireVisibleRoom(services, userId, roomId);
  if (role !== "owner" && memberId.toLowerCase() !== userId) throw forbidden("Only the room's owner may remove other members");
  if (memberId.toLowerCase() === room.owner_id) throw conflict("The owner cannot leave its own room; delete the room instead");
  if (!isUuid(memberId)) throw notFound("Member");
  const leaving = memberId.toLowerCase();
  return changeRoom(services, room.id, async (trx) => {
    if (!(await deleteMember(trx, room.id, leaving))) throw notFound("Member");
    return { result: room.id, events: [{ type: "member_left", data: { user_id: leaving }, user_id: leaving }] };
  });
}

/** Any member adds a persona it may use: its own or a public one. */
export async function addPersona(services: Services, userId: string, roomId: string, personaId: string): Promise<RoomPersonaRow> {
  const { room } = await requireMember(services, userId, roomId);
  const persona = await requireVisiblePersona(services, userId, personaId);
  const addedAt = services.now();
  await changeRoom(services, room.id, async (trx) => {
    const added = await insertRoomPersona(trx, { room_id: room.id, persona_id: persona.id, added_by: userId, added_at: addedAt }, ROOM_PERSONA_LIMIT);
    if (added === "present") throw conflict("The persona is already in the room");
    if (added === "full") throw conflict(`A room holds at most ${ROOM_PERSONA_LIMIT} personas`, { limit: ROOM_PERSONA_LIMIT });
    return { result: undefined, events: [{ type: "persona_added", data: { persona_id: persona.id, name: persona.name, added_at: addedAt.toISOString() } }] };
  });
  const row = (await listRoomPersonas(services.db.knex, room.id)).find((candidate) => candidate.persona_id === persona.id);
  if (!row) throw notFound("Persona");
  return row;
}

/** The owner takes out any persona; a member only one it added. Its messages stay. */
export async function removePersona(services: Services, userId: string, roomId: string, personaId: string): Promise<string> {
  const { room, role } = await requireMember(services, userId, roomId);
  const present = isUuid(personaId) ? await findRoomPersona(services.db.knex, room.id, personaId) : undefined;
  if (!present) throw notFound("Persona");
  if (role !== "owner" && present.added_by !== userId) throw forbidden("A member may take out only the personas it added");
  return changeRoom(services, room.id, async (trx) => {
    await deleteRoomPersona(trx, room.id, present.persona_id);
    return { result: room.id, events: [{ type: "persona_removed", data: { persona_id: present.persona_id, name: present.name } }] };
  });
}

/**
 * Where a member's event stream starts: after `lastEventId` when it reconnects, else after the
 * room's newest event. Members only: 403 for an onlooker of a public room, 404 for a private one.
 */
export async function openEvents(services: Services, userId: string, roomId: string, lastEventId: string | undefined): Promise<{ roomId: string; cursor: string }> {
  const { room } = await requireMember(services, userId, roomId);
  return { roomId: room.id, cursor: lastEventId ?? (await lastRoomEventId(services.db.knex, room.id)) };
}

// ---------------------------------------------------------------- trust and safety (issue 41)

/** A room message `userId` can see (a member's room, or a public room) and that is not taken down; undefined otherwise. */
export async function visibleRoomMessage(services: Services, userId: string, messageId: string): Promise<RoomMessageView | undefined> {
  const message = isUuid(messageId) ? await findRoomMessage(services.db.knex, messageId) : undefined;
  if (!message || (message.taken_down_at && message.user_id !== userId)) return undefined;
  const found = await findRoomWithRole(services.db.knex, message.room_id, userId);
  if (!found || (!found.role && !found.room.is_public)) return undefined;
  const { room_is_public: _public, ...view } = message;
  return view;
}

/** A room message by id, whatever its state (operators' review); undefined when none. */
export async function findRoomMessageForModeration(services: Services, messageId: string): Promise<RoomMessageView | undefined> {
  return isUuid(messageId) ? findRoomMessage(services.db.knex, messageId) : undefined;
}

/** Takes a room message down (`at`: shown to its sender only) or puts it back (null); false when none. */
export async function setRoomMessageTakedown(services: Services, messageId: string, at: Date | null): Promise<boolean> {
  return isUuid(messageId) && setRoomMessageTakenDown(services.db.knex, messageId, at);
}
