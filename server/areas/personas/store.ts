import type { Knex } from "knex";
import { offsetPage } from "../../toolkit/db/paging.ts";
import type { PageWindow } from "../../toolkit/http/paging.ts";
import type { components } from "../../../generated/openapi.d.ts";
import { byLiveCreator } from "./shown.ts";
import { TRENDING_ORDER, TRENDING_SCORES } from "./trending-store.ts";

export type ModelSettings = components["schemas"]["PersonaModelSettings"];

export interface PersonaRow {
  id: string;
  creator_id: string;
  name: string;
  /** Readable id, unique among the creator's personas (issue 35): what OpenAI-compatible clients may send as `model`. */
  handle: string;
  description: string;
  instructions: string;
  model: string;
  avatar_url: string | null;
  is_public: boolean;
  category: string;
  greeting_message: string | null;
  voice_id: string;
  message_count: number;
  /** Whether OpenAI-compatible clients may add their own system messages (issue 22). */
  allow_client_system_messages: boolean;
  /** Sampling defaults and what clients may set (issue 35; `PersonaModelSettings` in the contract). */
  model_settings: ModelSettings;
  created_at: Date;
  updated_at: Date;
  /** When the persona last became public (the social feed's "new persona"); null if never. */
  published_at: Date | null;
  /** The marketplace listing this persona was copied from with `use`; null otherwise. */
  source_listing_id?: string | null;
  /** One of the owner's provider connections their own chats with it run on (issue 40); null: the model's provider. */
  provider_connection_id?: string | null;
  /** `general` or `mature` (issue 41): lists show `mature` ones only to accounts that opted in (ratings.ts). */
  content_rating: ContentRating;
  /** When an operator took it down or the moderation provider held it (issue 41): hidden from every public place, still its owner's. */
  taken_down_at?: Date | null;
}

export type ContentRating = "general" | "mature";

/** The columns an owner may change; everything else is the service's to set. */
export type PersonaChanges = Partial<
  Pick<PersonaRow, "name" | "description" | "instructions" | "model" | "avatar_url" | "is_public" | "category" | "greeting_message" | "voice_id" | "allow_client_system_messages" | "published_at" | "handle" | "model_settings" | "content_rating" | "provider_connection_id">
>;

export type PersonaSortKey = "created_at" | "updated_at" | "name";
export type ExploreSortKey = "popular" | "recent" | "trending";


export async function findPersona(knex: Knex, id: string): Promise<PersonaRow | undefined> {
  return knex("personas").where({ id }).first();
}

/** The names of these personas by id, whoever may see them (deleted ones are left out). */
export async function personaNames(knex: Knex, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows: Pick<PersonaRow, "id" | "name">[] = await knex("personas").whereIn("id", ids).select("id", "name");
  return new Map(rows.map((row) => [row.id, row.name]));
}

export { byLiveCreator } from "./shown.ts";

/** Ids of every persona of this creator. */
export async function personaIdsOf(knex: Knex, creatorId: string): Promise<string[]> {
  const rows = await knex("personas").where({ creator_id: creatorId }).select<{ id: string }[]>("id");
  return rows.map((row) => row.id);
}

/** A public persona whose creator's account is live: what anyone, signed in or not, may see. */
export async function findPublicPersona(knex: Knex, id: string): Promise<PersonaRow | undefined> {
  return byLiveCreator(knex("personas as p").where("p.id", id).andWhere("p.is_public", true)).first("p.*");
}

/** A persona `viewerId` may see: their own, or a public one whose creator's account is live. */
export async function findVisiblePersona(knex: Knex, id: string, viewerId: string): Promise<PersonaRow | undefined> {
  return visiblePersonaQuery(knex, id, viewerId).first();
}

/** `findVisiblePersona`'s query (the persona's columns, at most one row), for a statement that reads more beside it. */
export function visiblePersonaQuery(knex: Knex, id: string, viewerId: string): Knex.QueryBuilder {
  return knex("personas as p")
    .where("p.id", id)
    .andWhere((visible) => visible.where("p.creator_id", viewerId).orWhere((shared) => byLiveCreator(shared.where("p.is_public", true))))
    .select("p.*");
}

export async function insertPersona(knex: Knex, row: PersonaRow): Promise<PersonaRow> {
  const [inserted] = await knex("personas").insert({ ...row, model_settings: JSON.stringify(row.model_settings) }).returning("*");
  return inserted as PersonaRow;
}

/** The creator's persona with this handle, if any. */
export async function findOwnPersonaByHandle(knex: Knex, creatorId: string, handle: string): Promise<PersonaRow | undefined> {
  return ownPersonaByHandleQuery(knex, creatorId, handle).first();
}

/** `findOwnPersonaByHandle`'s query (the persona's columns, at most one row: handles are unique per creator). */
export function ownPersonaByHandleQuery(knex: Knex, creatorId: string, handle: string): Knex.QueryBuilder {
  return knex("personas as p").where({ "p.creator_id": creatorId, "p.handle": handle }).select("p.*");
}

/** `username`'s persona with this handle, when `viewerId` may see it (their own, or a public one of a live account). */
export async function findVisiblePersonaByHandle(knex: Knex, username: string, handle: string, viewerId: string): Promise<PersonaRow | undefined> {
  return visiblePersonaByHandleQuery(knex, username, handle, viewerId).first();
}

/** `findVisiblePersonaByHandle`'s query (the persona's columns, at most one row). */
export function visiblePersonaByHandleQuery(knex: Knex, username: string, handle: string, viewerId: string): Knex.QueryBuilder {
  return knex("personas as p")
    .join("users as u", "u.id", "p.creator_id")
    .whereRaw("lower(u.username) = lower(?)", [username])
    .andWhere("p.handle", handle)
    .andWhere((visible) => visible.where("p.creator_id", viewerId).orWhere((shared) => byLiveCreator(shared.where("p.is_public", true))))
    .select("p.*");
}

/**
 * A persona row another statement read as JSON (`row_to_json` over the persona's columns): its
 * timestamps come as text there.
 */
export function personaFromJson(json: Omit<PersonaRow, "created_at" | "updated_at" | "published_at"> & { created_at: string; updated_at: string; published_at: string | null }): PersonaRow {
  return {
    ...json,
    created_at: new Date(json.created_at),
    updated_at: new Date(json.updated_at),
    published_at: json.published_at ? new Date(json.published_at) : null,
  };
}

/** The username of a persona's creator: the first half of the `<username>/<handle>` model name. */
export async function creatorUsername(knex: Knex, creatorId: string): Promise<string> {
  const row: { username: string } | undefined = await knex("users").where({ id: creatorId }).first("username");
  return row?.username ?? "";
}

export const HANDLE_INDEX = "personas_creator_handle_unique";

export async function countPersonasOf(knex: Knex, creatorId: string): Promise<number> {
  const row = await knex("personas").where({ creator_id: creatorId }).count<{ count: string | number }>({ count: "*" }).first();
  return Number(row?.count ?? 0);
}

/** Updates the creator's persona in one statement; undefined when it no longer exists. */
export async function updateOwnPersona(
  knex: Knex,
  id: string,
  creatorId: string,
  changes: PersonaChanges & { updated_at: Date },
): Promise<PersonaRow | undefined> {
  const values = changes.model_settings ? { ...changes, model_settings: JSON.stringify(changes.model_settings) } : changes;
  const [row] = await knex("personas").where({ id, creator_id: creatorId }).update(values).returning("*");
  return row as PersonaRow | undefined;
}

/** Conversations and their messages go with it (foreign keys ON DELETE CASCADE). */
export async function deleteOwnPersona(knex: Knex, id: string, creatorId: string): Promise<boolean> {
  const removed = await knex("personas").where({ id, creator_id: creatorId }).delete();
  return removed > 0;
}

/**
 * Stores a generated greeting only while the persona still has none, in one statement: a greeting
 * the owner set while the model was writing wins. `updated_at` stays: the owner changed nothing.
 */
export async function setGreetingIfMissing(knex: Knex, id: string, greeting: string): Promise<boolean> {
  const updated = await knex("personas").where({ id }).whereNull("greeting_message").update({ greeting_message: greeting });
  return updated > 0;
}

/** Sets a generated avatar only while the persona still has none: one the owner set meanwhile wins. `updated_at` stays. */
export async function setAvatarIfMissing(knex: Knex, id: string, url: string): Promise<boolean> {
  const updated = await knex("personas").where({ id }).whereNull("avatar_url").update({ avatar_url: url });
  return updated > 0;
}

// Every order ends on `id`, so rows with equal keys keep one order and pages neither repeat nor skip.
// Names compare lower-cased by code point, the same on PostgreSQL and the embedded database
// whatever collation either was created with.
const OWN_ORDER: Record<PersonaSortKey, string> = {
  created_at: "created_at DESC, id DESC",
  updated_at: "updated_at DESC, id DESC",
  name: 'lower(name) COLLATE "C" ASC, id ASC',
};

export async function listPersonasOf(
  knex: Knex,
  creatorId: string,
  sort: PersonaSortKey,
  page: PageWindow,
): Promise<{ rows: PersonaRow[]; total: number }> {
  return offsetPage(knex("personas").where({ creator_id: creatorId }), OWN_ORDER[sort], page);
}

export interface ExploreFilter {
  category?: string;
  /** The ratings the viewer is shown (ratings.ts). */
  ratings: readonly ContentRating[];
  /** Free text: full-text match over name and description, or a substring of the name. */
  q?: string;
}

/** LIKE treats `%`, `_` and the escape character itself as special; a search for them means them. */
function likeSubstring(text: string): string {
  return `%${text.replace(/[\\%_]/g, "\\$&")}%`;
}

function publicMatching(knex: Knex, filter: ExploreFilter): Knex.QueryBuilder {
  const query = byLiveCreator(knex("personas as p").where("p.is_public", true)).whereIn("p.content_rating", filter.ratings);
  if (filter.category) query.where("p.category", filter.category);
  if (filter.q !== undefined) {
    const q = filter.q;
    // The expression is the one of the personas_public_text index, so the planner can use it.
    query.where((match) =>
      match
        .whereRaw("to_tsvector('english', p.name || ' ' || p.description) @@ websearch_to_tsquery('english', ?)", [q])
        .orWhereRaw("p.name ILIKE ? ESCAPE '\\'", [likeSubstring(q)]),
    );
  }
  return query;
}

const EXPLORE_ORDER: Record<ExploreSortKey, string> = {
  popular: "p.message_count DESC, p.created_at DESC, p.id DESC",
  recent: "p.created_at DESC, p.id DESC",
  trending: TRENDING_ORDER,
};

/**
 * Public personas matching the filter, in the explore order. `trending` ranks by the scores the
 * last trending refresh stored (server/areas/personas/trending.ts).
 */
export async function explorePublicPersonas(
  knex: Knex,
  filter: ExploreFilter,
  sort: ExploreSortKey,
  page: PageWindow,
): Promise<{ rows: PersonaRow[]; total: number }> {
  const query = publicMatching(knex, filter).select("p.*");
  if (sort === "trending") query.leftJoin(`${TRENDING_SCORES} as t`, "t.persona_id", "p.id");
  return offsetPage(query, EXPLORE_ORDER[sort], page);
}

// ---------------------------------------------------------------- trust and safety (issue 41)

/** Takes the persona down (`at`) or puts it back (null), whoever owns it; false when it does not exist. */
export async function setPersonaTakenDown(knex: Knex, id: string, at: Date | null): Promise<boolean> {
  return (await knex("personas").where({ id }).update({ taken_down_at: at })) > 0;
}

/** An operator's change of the persona's rating; `updated_at` stays (its owner changed nothing). */
export async function setPersonaRating(knex: Knex, id: string, rating: ContentRating): Promise<PersonaRow | undefined> {
  const [row] = await knex("personas").where({ id }).update({ content_rating: rating }).returning("*");
  return row as PersonaRow | undefined;
}

/** Whether the account opted in to mature content (`users.show_mature`, set through the safety area). */
export async function showsMature(knex: Knex, userId: string): Promise<boolean> {
  const row: { show_mature: boolean } | undefined = await knex("users").where({ id: userId }).first("show_mature");
  return row?.show_mature === true;
}
