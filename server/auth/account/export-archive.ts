import type { Knex } from "knex";
import type { components } from "../../../generated/openapi.d.ts";
import type { UserRow } from "../users/store.ts";
import { toUser } from "../users/views.ts";
import { existingTables, rowsWhereIn } from "./store.ts";

export type DataExportArchive = components["schemas"]["DataExportArchive"];
type Row = Record<string, unknown>;

/**
 * Where each part of the archive lives. Areas land their tables over time, so a part is read from
 * the first of its candidate tables that exists, selected by the first owner column it has (the
 * user's own id), else by `persona_id` among the user's personas. A part whose table does not
 * exist yet is an empty array.
 */
interface Part {
  key:
    | "personas" | "conversations" | "knowledge_documents" | "instruction_versions" | "ratings"
    | "follows" | "likes" | "shares" | "rooms" | "api_keys" | "webhooks" | "integrations" | "images";
  tables: string[];
  owners: string[];
  viaPersona?: boolean;
}

const PARTS: Part[] = [
  { key: "personas", tables: ["personas"], owners: ["creator_id", "owner_id", "user_id"] },
  { key: "conversations", tables: ["conversations"], owners: ["user_id", "owner_id"] },
  { key: "knowledge_documents", tables: ["knowledge_documents"], owners: ["owner_id", "user_id"], viaPersona: true },
  { key: "instruction_versions", tables: ["instruction_versions"], owners: [], viaPersona: true },
  { key: "ratings", tables: ["ratings", "marketplace_ratings", "reviews"], owners: ["user_id"] },
  // Who the user follows; who follows the user is the followers' data.
  { key: "follows", tables: ["follows"], owners: ["follower_id"] },
  { key: "likes", tables: ["likes", "persona_likes"], owners: ["user_id"] },
  // Share links the user made, with their open counts.
  { key: "shares", tables: ["persona_shares"], owners: ["user_id"] },
  { key: "rooms", tables: ["rooms"], owners: ["owner_id", "creator_id"] },
  { key: "api_keys", tables: ["api_keys"], owners: ["user_id"] },
  { key: "webhooks", tables: ["webhooks"], owners: ["user_id", "owner_id"] },
  { key: "integrations", tables: ["integrations"], owners: ["user_id", "owner_id"], viaPersona: true },
  // Generated images as links (`url`), not their bytes.
  { key: "images", tables: ["images"], owners: ["user_id"] },
];
const MESSAGE_TABLES = ["messages", "conversation_messages"];
const ROOM_TABLES = ["room_members", "room_personas", "room_messages"];

// Credentials and machine-only data never leave: hashes, secrets, tokens (encrypted or not), vectors.
const WITHHELD = /(^|_)(hash|secret|token|tokens|password|encrypted|embedding)(_|$)/;

/** Everything the user owns, as one JSON document (the contract's DataExportArchive). */
export async function buildArchive(knex: Knex, user: UserRow, now: Date): Promise<DataExportArchive> {
  const names = [...PARTS.flatMap((part) => part.tables), ...MESSAGE_TABLES, ...ROOM_TABLES];
  const tables = await existingTables(knex, names);
  const parts = new Map<string, Row[]>();
  let personaIds: string[] = [];

  // Personas first: other parts hang off them.
  for (const part of PARTS) {
    const rows = await readPart(knex, tables, part, user.id, personaIds);
    parts.set(part.key, rows);
    if (part.key === "personas") personaIds = rows.map((row) => String(row.id));
  }

  const conversations = parts.get("conversations")!;
  const messageTable = MESSAGE_TABLES.find((name) => tables.get(name)?.has("conversation_id"));
  if (messageTable && conversations.length > 0) {
    const messages = await rowsWhereIn(
      knex,
      messageTable,
      "conversation_id",
      conversations.map((row) => String(row.id)),
      tables.get(messageTable)!.has("created_at") ? "created_at" : undefined,
    );
    const byConversation = new Map<string, Row[]>();
    for (const message of messages.map(clean)) {
      const id = String(message.conversation_id);
      if (!byConversation.has(id)) byConversation.set(id, []);
      byConversation.get(id)!.push(message);
    }
    for (const conversation of conversations) conversation.messages = byConversation.get(String(conversation.id)) ?? [];
  }

  if (ROOM_TABLES.every((name) => tables.has(name))) parts.set("rooms", await roomsOf(knex, user.id, parts.get("rooms")!));

  const archive = {
    format_version: 1,
    exported_at: now.toISOString(),
    user: toUser(user),
    ...Object.fromEntries(parts),
  } as DataExportArchive;
  // Timestamps to ISO strings, as on the wire everywhere else.
  return JSON.parse(JSON.stringify(archive)) as DataExportArchive;
}

async function readPart(knex: Knex, tables: Map<string, Set<string>>, part: Part, userId: string, personaIds: string[]): Promise<Row[]> {
  for (const table of part.tables) {
    const columns = tables.get(table);
    if (!columns) continue;
    const order = columns.has("created_at") ? "created_at" : undefined;
    const owner = part.owners.find((column) => columns.has(column));
    if (owner) return (await rowsWhereIn(knex, table, owner, [userId], order)).map(clean);
    if (part.viaPersona && columns.has("persona_id")) return (await rowsWhereIn(knex, table, "persona_id", personaIds, order)).map(clean);
    return [];
  }
  return [];
}

/**
 * The rooms the user owns, each with its members, personas and every message (the owner keeps the
 * room's history, as a group chat's export does), then the rooms the user belongs to, each with only
 * the messages the user wrote there. `role` says which.
 */
async function roomsOf(knex: Knex, userId: string, owned: Row[]): Promise<Row[]> {
  const memberships = await rowsWhereIn(knex, "room_members", "user_id", [userId], "joined_at");
  const joinedIds = memberships.filter((row) => row.role !== "owner").map((row) => String(row.room_id));
  const joined = (await rowsWhereIn(knex, "rooms", "id", joinedIds, "created_at")).map(clean);
  const rooms: Row[] = [...owned.map((room) => ({ ...room, role: "owner" })), ...joined.map((room) => ({ ...room, role: "member" }))];
  const ids = rooms.map((room) => String(room.id));
  const [members, personas, messages] = await Promise.all([
    rowsWhereIn(knex, "room_members", "room_id", ids, "joined_at"),
    rowsWhereIn(knex, "room_personas", "room_id", ids, "added_at"),
    rowsWhereIn(knex, "room_messages", "room_id", ids, "created_at"),
  ]);
  const of = (rows: Row[], roomId: string) => rows.filter((row) => String(row.room_id) === roomId).map(clean);
  return rooms.map((room) => {
    const id = String(room.id);
    const said = of(messages, id);
    return { ...room, members: of(members, id), personas: of(personas, id), messages: room.role === "owner" ? said : said.filter((row) => row.user_id === userId) };
  });
}

function clean(row: Row): Row {
  return Object.fromEntries(Object.entries(row).filter(([column, value]) => !WITHHELD.test(column) && !Buffer.isBuffer(value)));
}
