import type { Knex } from "knex";
import { offsetPage } from "../../toolkit/db/paging.ts";
import type { PageWindow } from "../../toolkit/http/paging.ts";
import { onlyLiveCreators } from "../personas/index.ts";

export type RoomRole = "owner" | "member";
export type ReplyMode = "natural" | "mentions_only" | "all";

export interface RoomRow {
  id: string;
  owner_id: string;
  name: string;
  description: string;
  is_public: boolean;
  reply_mode: ReplyMode;
  last_message_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface MemberRow {
  room_id: string;
  user_id: string;
  role: RoomRole;
  joined_at: Date;
}

/** A persona in a room, with what a reply needs of it. */
export interface RoomPersonaRow {
  room_id: string;
  persona_id: string;
  name: string;
  description: string;
  instructions: string;
  model: string;
  greeting_message: string | null;
  creator_id: string;
  added_by: string;
  added_at: Date;
}

export interface RoomMessageRow {
  id: string;
  room_id: string;
  sender_type: "user" | "persona";
  user_id: string | null;
  persona_id: string | null;
  persona_name: string | null;
  content: string;
  content_tokens: number;
  model: string | null;
  input_tokens: number | null;
  output_tokens: number | null;
  created_at: Date;
  /** A persona's reply: the registry model that answered, its fallback's origin, own key, cost and whom it is billed to (issue 40). */
  model_id?: string | null;
  fallback_from?: string | null;
  own_key?: boolean;
  cost_nanos?: number | null;
  billed_user_id?: string | null;
  /** When an operator took the message down (issue 41): shown to its sender only. */
  taken_down_at?: Date | null;
}

/** A stored message with its author's current name. */
export interface RoomMessageView extends RoomMessageRow {
  sender_name: string;
}

export interface RoomListRow extends RoomRow {
  member_count: number;
  persona_count: number;
}

/**
 * Personas that may be shown beyond their owner (the personas area's one rule): a persona taken
 * down, or of a deleted or suspended account, neither shows in a room nor answers there.
 */
function liveCreator(query: Knex.QueryBuilder): Knex.QueryBuilder {
  return onlyLiveCreators(query);
}

export async function insertRoom(
  knex: Knex,
  room: RoomRow,
  personas: { persona_id: string; added_by: string; added_at: Date }[],
): Promise<void> {
  await knex.transaction(async (trx) => {
    await trx("rooms").insert(room);
    await trx("room_members").insert({ room_id: room.id, user_id: room.owner_id, role: "owner", joined_at: room.created_at });
    // One row at a time so that `seq` follows the order the caller listed them in.
    for (const persona of personas) await trx("room_personas").insert({ room_id: room.id, ...persona });
  });
}

/** The room with the user's role in it (none when not a member), in one query. */
export async function findRoomWithRole(knex: Knex, roomId: string, userId: string): Promise<{ room: RoomRow; role: RoomRole | undefined } | undefined> {
  const row = await knex("rooms as r")
    .leftJoin("room_members as me", function () {
      this.on("me.room_id", "r.id").andOnVal("me.user_id", userId);
    })
    .where("r.id", roomId)
    .first("r.*", "me.role as member_role");
  if (!row) return undefined;
  const { member_role: role, ...room } = row as RoomRow & { member_role: RoomRole | null };
  return { room, role: role ?? undefined };
}

export async function listMembers(knex: Knex, roomId: string): Promise<MemberRow[]> {
  return knex("room_members").where({ room_id: roomId }).orderBy([{ column: "joined_at" }, { column: "seq" }]).select("room_id", "user_id", "role", "joined_at");
}

export async function listRoomPersonas(knex: Knex, roomId: string): Promise<RoomPersonaRow[]> {
  return liveCreator(
    knex("room_personas as rp")
      .join("personas as p", "p.id", "rp.persona_id")
      .where("rp.room_id", roomId)
      .orderBy([{ column: "rp.added_at" }, { column: "rp.seq" }])
      .select(
        "rp.room_id",
        "rp.persona_id",
        "p.name",
        "p.description",
        "p.instructions",
        "p.model",
        "p.greeting_message",
        "p.creator_id",
        "rp.added_by",
        "rp.added_at",
      ),
  );
}

/** The caller's rooms, the most recently active first, with their member and persona counts. */
export async function listRoomsOf(knex: Knex, userId: string, window: PageWindow): Promise<{ rows: RoomListRow[]; total: number }> {
  const personaCount = liveCreator(knex("room_personas as rp").join("personas as p", "p.id", "rp.persona_id").whereRaw("rp.room_id = r.id"))
    .count("*");
  const query = knex("rooms as r")
    .join("room_members as me", function () {
      this.on("me.room_id", "r.id").andOnVal("me.user_id", userId);
    })
    .select(
      "r.*",
      knex("room_members as m").count("*").whereRaw("m.room_id = r.id").as("member_count"),
      personaCount.as("persona_count"),
    );
  const page = await offsetPage<RoomListRow>(query, "coalesce(r.last_message_at, r.created_at) DESC, r.id DESC", window);
  return { rows: page.rows.map((row) => ({ ...row, member_count: Number(row.member_count), persona_count: Number(row.persona_count) })), total: page.total };
}

export async function updateRoom(knex: Knex, id: string, changes: Partial<Pick<RoomRow, "name" | "description" | "is_public" | "reply_mode">>, now: Date): Promise<RoomRow> {
  const [row] = await knex("rooms").where({ id }).update({ ...changes, updated_at: now }).returning("*");
  return row as RoomRow;
}

export async function deleteRoom(knex: Knex, id: string): Promise<void> {
  await knex("rooms").where({ id }).delete();
}

/**
 * Locks the room's row until the transaction ends; false when the room is gone. Every transaction
 * that writes room events takes it first, so within a room event ids are allocated, and committed,
 * in order: a reader that has seen event N of a room has seen every earlier one.
 */
export async function lockRoom(trx: Knex.Transaction, roomId: string): Promise<boolean> {
  return Boolean(await trx("rooms").where({ id: roomId }).forNoKeyUpdate().first("id"));
}

/** Adds a member; false when the user is one already. */
export async function insertMember(knex: Knex, member: MemberRow): Promise<boolean> {
  const inserted = await knex("room_members").insert(member).onConflict(["room_id", "user_id"]).ignore().returning("user_id");
  return inserted.length > 0;
}

export async function deleteMember(knex: Knex, roomId: string, userId: string): Promise<boolean> {
  return (await knex("room_members").where({ room_id: roomId, user_id: userId }).delete()) > 0;
}

export async function findRoomPersona(knex: Knex, roomId: string, personaId: string): Promise<{ persona_id: string; name: string; added_by: string } | undefined> {
  return knex("room_personas as rp")
    .join("personas as p", "p.id", "rp.persona_id")
    .where({ "rp.room_id": roomId, "rp.persona_id": personaId })
    .first("rp.persona_id", "p.name", "rp.added_by");
}

/**
 * Adds a persona while the room has fewer than `limit`; `full` or `present` when it cannot. Run in
 * a transaction that holds the room's lock (`lockRoom`), so two adds at once cannot both see room
 * for one more.
 */
export async function insertRoomPersona(
  trx: Knex.Transaction,
  row: { room_id: string; persona_id: string; added_by: string; added_at: Date },
  limit: number,
): Promise<"added" | "present" | "full"> {
  if (await trx("room_personas").where({ room_id: row.room_id, persona_id: row.persona_id }).first("persona_id")) return "present";
  const counted = await trx("room_personas").where({ room_id: row.room_id }).count<{ count: string | number }>({ count: "*" }).first();
  if (Number(counted?.count ?? 0) >= limit) return "full";
  await trx("room_personas").insert(row);
  return "added";
}

export async function deleteRoomPersona(knex: Knex, roomId: string, personaId: string): Promise<void> {
  await knex("room_personas").where({ room_id: roomId, persona_id: personaId }).delete();
}

const MESSAGE_COLUMNS =
  "id uuid, room_id uuid, sender_type text, user_id uuid, persona_id uuid, persona_name text, content text, content_tokens integer, model text, input_tokens integer, output_tokens integer, created_at timestamptz, " +
  "model_id text, fallback_from text, own_key boolean, cost_nanos bigint, billed_user_id uuid";
const MESSAGE_COLUMN_NAMES = "id, room_id, sender_type, user_id, persona_id, persona_name, content, content_tokens, model, input_tokens, output_tokens, created_at, model_id, fallback_from, own_key, cost_nanos, billed_user_id";
// A user's message carries no reply's fields: `own_key` is false unless given.
const MESSAGE_VALUES = MESSAGE_COLUMN_NAMES.replace("own_key", "coalesce(own_key, false)");

/**
 * Stores messages of one room with their `message` events and moves the room's
 * `last_message_at`, in one statement (one round trip, atomic). The room's row is updated first:
 * the events' ids are allocated only once its lock is held, as `lockRoom` ensures elsewhere.
 * Answers the id of the last event.
 */
export async function insertRoomMessagesWithEvents(knex: Knex, rows: RoomMessageRow[], events: NewRoomEvent[], at: Date): Promise<string> {
  const latest = rows.reduce((max, row) => (row.created_at > max ? row.created_at : max), rows[0]!.created_at);
  const result = await knex.raw(
    `WITH room AS (
       UPDATE rooms SET last_message_at = greatest(coalesce(last_message_at, :latest), :latest) WHERE id = :roomId RETURNING id
     ), messages AS (
       INSERT INTO room_messages (${MESSAGE_COLUMN_NAMES})
       SELECT ${MESSAGE_VALUES} FROM jsonb_to_recordset(:messages::jsonb) AS m(${MESSAGE_COLUMNS})
       RETURNING id
     ), events AS (
       INSERT INTO room_events (room_id, type, data, message_id, user_id, created_at)
       SELECT room.id, e.type, e.data, e.message_id, e.user_id, :at
       FROM room, ROWS FROM (jsonb_to_recordset(:events::jsonb) AS (type text, data jsonb, message_id uuid, user_id uuid)) WITH ORDINALITY AS e(type, data, message_id, user_id, n)
       ORDER BY e.n
       RETURNING id
     )
     SELECT (SELECT max(id) FROM events) AS last_id, (SELECT count(*) FROM messages) AS stored`,
    {
      roomId: rows[0]!.room_id,
      latest,
      at,
      messages: JSON.stringify(rows),
      events: JSON.stringify(events.map((event) => ({ type: event.type, data: event.data, message_id: event.message_id ?? null, user_id: event.user_id ?? null }))),
    },
  );
  const row = result.rows[0] as { last_id: string | number | null };
  if (row.last_id === null) throw new Error(`Room ${rows[0]!.room_id} is gone`);
  return String(row.last_id);
}

function messagesWithNames(knex: Knex, roomId: string): Knex.QueryBuilder {
  return knex("room_messages as rm")
    .leftJoin("users as u", "u.id", "rm.user_id")
    .leftJoin("personas as p", "p.id", "rm.persona_id")
    .where("rm.room_id", roomId)
    // A suspended account's messages show to no one, personas included, until the suspension is
    // lifted (issue 41: its content is hidden); a persona's messages have no user.
    .whereNull("u.suspended_at")
    .select("rm.*", knex.raw("coalesce(nullif(u.display_name, ''), u.username, p.name, rm.persona_name) AS sender_name"));
}

/** History newest first; the id orders messages of the same instant. A message taken down is its sender's only (issue 41). */
export async function listRoomMessages(knex: Knex, roomId: string, viewerId: string, before: Date | undefined, window: PageWindow): Promise<{ rows: RoomMessageView[]; total: number }> {
  const query = messagesWithNames(knex, roomId).where((shown) => shown.whereNull("rm.taken_down_at").orWhere("rm.user_id", viewerId));
  if (before) query.where("rm.created_at", "<", before);
  return offsetPage<RoomMessageView>(query, "rm.created_at DESC, rm.id DESC", window);
}

export async function recentRoomMessages(knex: Knex, roomId: string, limit: number): Promise<RoomMessageView[]> {
  return messagesWithNames(knex, roomId).whereNull("rm.taken_down_at").orderByRaw("rm.created_at DESC, rm.id DESC").limit(limit);
}

/**
 * When each persona of the room last spoke there: one index probe per persona (a room holds ten at
 * most), however long the room's history.
 */
export async function lastSpoken(knex: Knex, roomId: string): Promise<Map<string, Date>> {
  const rows: { persona_id: string; at: Date | null }[] = await knex("room_personas as rp")
    .where("rp.room_id", roomId)
    .select(
      "rp.persona_id",
      knex.raw("(SELECT m.created_at FROM room_messages m WHERE m.room_id = rp.room_id AND m.persona_id = rp.persona_id ORDER BY m.created_at DESC LIMIT 1) AS at"),
    );
  return new Map(rows.flatMap((row) => (row.at ? [[row.persona_id, new Date(row.at)] as const] : [])));
}

export async function userName(knex: Knex, userId: string): Promise<string> {
  const row = await knex("users").where({ id: userId }).first("display_name", "username");
  return (row?.display_name || row?.username) ?? "";
}

export type RoomEventType = "message" | "member_joined" | "member_left" | "persona_added" | "persona_removed";

/** A room event to store: its data as the contract shows it, and what it cascades with. */
export interface NewRoomEvent {
  type: RoomEventType;
  data: object;
  message_id?: string;
  user_id?: string;
}

export interface RoomEventRow {
  /** A bigint, as a decimal string. */
  id: string;
  type: RoomEventType;
  data: Record<string, unknown>;
  /**
   * A `message` event whose message is hidden now (taken down, or its author suspended; issue 41):
   * a stream passes its id by without sending it, as the history leaves the message out.
   */
  hidden?: boolean;
}

/** Stores events in order; answers the id of the last one. Run after `lockRoom` (or `insertRoomMessages`). */
export async function insertRoomEvents(trx: Knex.Transaction, roomId: string, events: NewRoomEvent[], at: Date): Promise<string> {
  const rows = await trx("room_events")
    .insert(events.map((event) => ({ room_id: roomId, type: event.type, data: JSON.stringify(event.data), message_id: event.message_id ?? null, user_id: event.user_id ?? null, created_at: at })))
    .returning("id");
  return String(rows.at(-1)!.id);
}

/** The room's events after `after` (exclusive) up to `upTo` (inclusive, when given), oldest first. */
export async function roomEventsAfter(knex: Knex, roomId: string, after: string, upTo: string | undefined, limit: number): Promise<RoomEventRow[]> {
  const query = knex("room_events as e")
    .leftJoin("room_messages as m", "m.id", "e.message_id")
    .leftJoin("users as u", "u.id", "m.user_id")
    .where("e.room_id", roomId)
    .andWhere("e.id", ">", after);
  if (upTo !== undefined) query.andWhere("e.id", "<=", upTo);
  const rows: (RoomEventRow & { hidden: boolean })[] = await query
    .orderBy("e.id")
    .limit(limit)
    .select("e.id", "e.type", "e.data", knex.raw("(m.taken_down_at IS NOT NULL OR u.suspended_at IS NOT NULL) AS hidden"));
  return rows.map(({ hidden, ...row }) => ({ ...row, id: String(row.id), ...(hidden ? { hidden: true } : {}) }));
}

/** The id of the room's newest event, "0" when it has none. */
export async function lastRoomEventId(knex: Knex, roomId: string): Promise<string> {
  const row = await knex("room_events").where("room_id", roomId).max<{ max: string | number | null }>("id as max").first();
  return row?.max === null || row?.max === undefined ? "0" : String(row.max);
}

/** Removes events stored before `before`; answers how many. */
export async function purgeRoomEvents(knex: Knex, before: Date): Promise<number> {
  return knex("room_events").where("created_at", "<", before).delete();
}

/** The room's member ids; undefined when the room is gone. */
export async function memberIdsOf(knex: Knex, roomId: string): Promise<Set<string> | undefined> {
  const [room, members] = await Promise.all([knex("rooms").where({ id: roomId }).first("id"), knex("room_members").where({ room_id: roomId }).pluck("user_id")]);
  return room ? new Set(members as string[]) : undefined;
}

// ---------------------------------------------------------------- trust and safety (issue 41)

/** A room message by id with its room's publicness, whatever its state (the safety area's reports). */
export async function findRoomMessage(knex: Knex, id: string): Promise<(RoomMessageView & { room_is_public: boolean }) | undefined> {
  const row = await knex("room_messages as rm")
    .join("rooms as r", "r.id", "rm.room_id")
    .leftJoin("users as u", "u.id", "rm.user_id")
    .leftJoin("personas as p", "p.id", "rm.persona_id")
    .where("rm.id", id)
    .first("rm.*", "r.is_public as room_is_public", knex.raw("coalesce(nullif(u.display_name, ''), u.username, p.name, rm.persona_name) AS sender_name"));
  return row as (RoomMessageView & { room_is_public: boolean }) | undefined;
}

/** Takes a room message down (`at`) or puts it back (null); false when none. */
export async function setRoomMessageTakenDown(knex: Knex, id: string, at: Date | null): Promise<boolean> {
  return (await knex("room_messages").where({ id }).update({ taken_down_at: at })) > 0;
}
