import { archiveRows, type AccountDataSection, type ArchiveRow, type ExportContext } from "../../toolkit/account-data.ts";
import { forgetBilledMembers } from "./costs.ts";

/**
 * The rooms the user owns, each with its members, personas and every message (the owner keeps the
 * room's history, as a group chat's export does), then the rooms the user belongs to, each with only
 * the messages the user wrote there. `role` says which.
 */
async function roomsOf({ knex, userId }: ExportContext): Promise<ArchiveRow[]> {
  const owned = await archiveRows(knex, "rooms", "owner_id", [userId]);
  const memberships = await archiveRows(knex, "room_members", "user_id", [userId], "joined_at");
  const joinedIds = memberships.filter((row) => row.role !== "owner").map((row) => String(row.room_id));
  const joined = await archiveRows(knex, "rooms", "id", joinedIds);
  const rooms: ArchiveRow[] = [...owned.map((room) => ({ ...room, role: "owner" })), ...joined.map((room) => ({ ...room, role: "member" }))];
  const ids = rooms.map((room) => String(room.id));
  const [members, personas, messages] = await Promise.all([
    archiveRows(knex, "room_members", "room_id", ids, "joined_at"),
    archiveRows(knex, "room_personas", "room_id", ids, "added_at"),
    archiveRows(knex, "room_messages", "room_id", ids),
  ]);
  const of = (rows: ArchiveRow[], roomId: string) => rows.filter((row) => String(row.room_id) === roomId);
  return rooms.map((room) => {
    const id = String(room.id);
    const said = of(messages, id);
    return { ...room, members: of(members, id), personas: of(personas, id), messages: room.role === "owner" ? said : said.filter((row) => row.user_id === userId) };
  });
}

export const roomAccountData: AccountDataSection[] = [
  {
    key: "rooms",
    tables: ["rooms", "room_members", "room_personas", "room_messages"],
    exportRows: roomsOf,
    // The personas' replies to a purged member's posts stay in the room (the member's own messages
    // cascade): what they cost stays the persona's, billed to no one.
    beforePurge: async (services, userIds) => {
      await forgetBilledMembers(services.db.knex, userIds).catch((error: unknown) => services.log.warn({ err: error }, "could not clear purged accounts from room replies' billing"));
    },
  },
  {
    key: "room_events",
    tables: ["room_events"],
    withheld: "The live stream's copies of room messages and membership changes, kept 24 hours for replay; the rooms section holds the messages themselves.",
  },
];
