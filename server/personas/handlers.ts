import type { components } from "../../generated/openapi.d.ts";
import { principalOf } from "../http/authenticate.ts";
import type { Handler } from "../http/router.ts";
import { createPersona, deletePersona, explorePersonas, listOwnPersonas, requireVisiblePersona, updatePersona } from "./service.ts";
import type { PersonaRow } from "./store.ts";

type Schemas = components["schemas"];

// The validator fills the contract's defaults in; these hold for a caller that bypasses it.
const DEFAULT_LIMIT = 20;

/** The full persona; the system prompt is its owner's only (others get an empty string). */
function toPersona(row: PersonaRow, viewerId: string): Schemas["Persona"] {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    instructions: row.creator_id === viewerId ? row.instructions : "",
    model: row.model,
    avatar_url: row.avatar_url,
    is_public: row.is_public,
    category: row.category as Schemas["PersonaCategory"],
    greeting_message: row.greeting_message,
    voice_id: row.voice_id as Schemas["VoiceId"],
    message_count: row.message_count,
    creator_id: row.creator_id,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

function toSummary(row: PersonaRow): Schemas["PersonaSummary"] {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    model: row.model,
    avatar_url: row.avatar_url,
    is_public: row.is_public,
    category: row.category as Schemas["PersonaCategory"],
    message_count: row.message_count,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

const toExplorePersona = (row: PersonaRow): Schemas["ExplorePersona"] => ({ ...toSummary(row), creator_id: row.creator_id });

export const personas_create: Handler<"personas_create"> = async ({ services, req, body }) => {
  const userId = principalOf(req).userId;
  return { status: 201, body: toPersona(await createPersona(services, userId, body), userId) };
};

export const personas_get: Handler<"personas_get"> = async ({ services, req, params }) => {
  const userId = principalOf(req).userId;
  return { status: 200, body: toPersona(await requireVisiblePersona(services, userId, params.id), userId) };
};

export const personas_update: Handler<"personas_update"> = async ({ services, req, params, body }) => {
  const userId = principalOf(req).userId;
  return { status: 200, body: toPersona(await updatePersona(services, userId, params.id, body), userId) };
};

export const personas_delete: Handler<"personas_delete"> = async ({ services, req, params }) => ({
  status: 200,
  body: { id: await deletePersona(services, principalOf(req).userId, params.id), deleted: true },
});

export const personas_list: Handler<"personas_list"> = async ({ services, req, query }) => {
  const page = { limit: query.limit ?? DEFAULT_LIMIT, offset: query.offset ?? 0 };
  const { rows, total } = await listOwnPersonas(services, principalOf(req).userId, query.sort ?? "created_at", page);
  return { status: 200, body: { data: rows.map(toSummary), total, ...page } };
};

export const personas_explore: Handler<"personas_explore"> = async ({ services, query }) => {
  const page = { limit: query.limit ?? DEFAULT_LIMIT, offset: query.offset ?? 0 };
  const filter = { category: query.category, q: query.q };
  const { rows, total } = await explorePersonas(services, filter, query.sort ?? "popular", page);
  return { status: 200, body: { data: rows.map(toExplorePersona), total, ...page } };
};
