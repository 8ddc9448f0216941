import type { components } from "../../../generated/openapi.d.ts";
import { publicBaseUrl, type Config } from "../../toolkit/config.ts";
import { EMBED_PATHS } from "./paths.ts";
import type { OwnerSettings } from "./settings.ts";
import { isLive } from "./settings.ts";
import type { EmbedConversationRow } from "./store.ts";

// The embeds area's rows as the contract shows them.

type Schemas = components["schemas"];

/** The snippet an owner pastes into a page of their site. */
export function snippetOf(config: Pick<Config, "publicBaseUrl" | "host" | "port">, personaId: string): string {
  return `<script src="${publicBaseUrl(config)}${EMBED_PATHS.loader}" data-persona="${personaId}" async></script>`;
}

export function toEmbedSettings(owned: OwnerSettings, config: Pick<Config, "publicBaseUrl" | "host" | "port">): Schemas["EmbedSettings"] {
  const { persona, settings } = owned;
  return {
    persona_id: persona.id,
    enabled: settings.enabled,
    allowed_origins: settings.allowedOrigins,
    daily_message_cap: settings.dailyMessageCap,
    messages_today: owned.messagesToday,
    live: isLive(settings, persona),
    snippet: snippetOf(config, persona.id),
    iframe_url: `${publicBaseUrl(config)}${EMBED_PATHS.page}/${persona.id}`,
    updated_at: settings.updatedAt?.toISOString() ?? null,
  };
}

export function toEmbedConversation(row: EmbedConversationRow): Schemas["EmbedConversation"] {
  return {
    conversation_id: row.conversation_id,
    guest_id: row.guest_id,
    visitor_messages: row.visitor_messages,
    started_at: row.started_at.toISOString(),
    last_message_at: row.last_message_at?.toISOString() ?? null,
  };
}

/** A stored message as the visitor's reopened chat shows it. */
export function toTranscriptMessage(row: { id: string; role: "user" | "assistant"; content: string; stopped: boolean; created_at: Date }): Schemas["EmbedTranscriptMessage"] {
  return { id: row.id, role: row.role, content: row.content, stopped: row.stopped, created_at: row.created_at.toISOString() };
}

/** A generation as the visitor's stop answers it (the conversations area's `Generation`). */
export function toGeneration(row: {
  id: string;
  conversation_id: string;
  status: Schemas["GenerationStatus"];
  user_message_id: string | null;
  reply_message_id: string | null;
  started_at: Date;
  finished_at: Date | null;
}): Schemas["Generation"] {
  return {
    id: row.id,
    conversation_id: row.conversation_id,
    status: row.status,
    user_message_id: row.user_message_id,
    reply_message_id: row.reply_message_id,
    started_at: row.started_at.toISOString(),
    finished_at: row.finished_at?.toISOString() ?? null,
  };
}
