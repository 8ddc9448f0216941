import type { components } from "../../../../generated/openapi.d.ts";
import type { GenerationRow } from "./store.ts";

type Generation = components["schemas"]["Generation"];

export function toGeneration(row: GenerationRow): Generation {
  return {
    id: row.id,
    conversation_id: row.conversation_id,
    status: row.status,
    user_message_id: row.user_message_id,
    reply_message_id: row.reply_message_id,
    started_at: new Date(row.started_at).toISOString(),
    finished_at: row.finished_at === null ? null : new Date(row.finished_at).toISOString(),
  };
}
