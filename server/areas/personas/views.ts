import type { components } from "../../../generated/openapi.d.ts";
import { shownLink, type Where } from "../../toolkit/links.ts";
import type { PersonaRow } from "./store.ts";

// Persona rows as the contract shows them; `where` makes a stored link absolute (server/toolkit/links.ts).

type Schemas = components["schemas"];

/** The full persona; the system prompt is its owner's only (others get an empty string). */
export function toPersona(row: PersonaRow, viewerId: string, where: Where): Schemas["Persona"] {
  return {
    id: row.id,
    name: row.name,
    handle: row.handle,
    description: row.description,
    instructions: row.creator_id === viewerId ? row.instructions : "",
    model: row.model,
    avatar_url: shownLink(where, row.avatar_url),
    is_public: row.is_public,
    category: row.category as Schemas["PersonaCategory"],
    greeting_message: row.greeting_message,
    voice_id: row.voice_id as Schemas["VoiceId"],
    message_count: row.message_count,
    allow_client_system_messages: row.allow_client_system_messages,
    // Like the instructions, the owner's settings are the owner's.
    model_settings: row.creator_id === viewerId ? row.model_settings : {},
    // Which of the owner's connections runs their chats is the owner's to know.
    provider_connection_id: row.creator_id === viewerId ? (row.provider_connection_id ?? null) : null,
    creator_id: row.creator_id,
    content_rating: row.content_rating,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export function toSummary(row: PersonaRow, where: Where): Schemas["PersonaSummary"] {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    model: row.model,
    avatar_url: shownLink(where, row.avatar_url),
    is_public: row.is_public,
    category: row.category as Schemas["PersonaCategory"],
    message_count: row.message_count,
    content_rating: row.content_rating,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export const toExplorePersona = (row: PersonaRow, where: Where): Schemas["ExplorePersona"] => ({ ...toSummary(row, where), creator_id: row.creator_id });
