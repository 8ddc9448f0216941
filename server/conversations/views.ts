import type { components } from "../../generated/openapi.d.ts";
import type { ConversationRow, MessageRow } from "./store.ts";

export type Message = components["schemas"]["Message"];
export type Conversation = components["schemas"]["Conversation"];

/** A stored message as the API shows it; only replies carry `citations`. */
export function toMessage(row: MessageRow): Message {
  const message: Message = {
    id: row.id,
    conversation_id: row.conversation_id,
    role: row.role,
    content: row.content,
    created_at: row.created_at.toISOString(),
  };
  if (row.role === "assistant") message.citations = row.citations ?? [];
  return message;
}

export function toConversation(row: ConversationRow): Conversation {
  return {
    id: row.id,
    persona_id: row.persona_id,
    title: row.title,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    message_count: row.message_count,
  };
}
