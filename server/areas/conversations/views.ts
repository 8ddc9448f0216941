import type { components } from "../../../generated/openapi.d.ts";
import type { BranchRow } from "./tree/branches.ts";
import { isGreeting } from "./greetings.ts";
import { renderHighlight } from "./highlight.ts";
import type { ConversationRow, MessageRow, SearchHitRow } from "./store.ts";

export type Message = components["schemas"]["Message"];
export type Conversation = components["schemas"]["Conversation"];
type ConversationDetail = components["schemas"]["ConversationDetail"];
type SearchHit = components["schemas"]["ConversationSearchHit"];
type MessageExchange = components["schemas"]["MessageExchange"];

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
  message.parent_id = row.parent_id;
  // A message fresh from a reply was not read back with its siblings: it is then the only one.
  message.alternative_index = row.alternative_index ?? 0;
  message.alternative_count = row.alternative_count ?? 1;
  if (row.role === "assistant" && row.input_tokens !== null && row.output_tokens !== null) {
    message.usage = { input_tokens: row.input_tokens, output_tokens: row.output_tokens };
  }
  if (row.stopped) message.stopped = true;
  if (isGreeting(row)) message.greeting = true;
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
    active_message_id: row.active_message_id,
    usage: { input_tokens: Number(row.input_tokens_total), output_tokens: Number(row.output_tokens_total) },
  };
}

/** A conversation with its most recent messages, given newest first (as read) and shown oldest first. */
export function toConversationDetail(row: ConversationRow, recentFirst: MessageRow[]): ConversationDetail {
  return { ...toConversation(row), messages: [...recentFirst].reverse().map(toMessage) };
}

export function toSearchHit(row: SearchHitRow): SearchHit {
  return {
    message: toMessage(row),
    conversation: { id: row.conversation_id, title: row.conversation_title },
    highlight: renderHighlight(row.highlight_raw),
  };
}

export function toExchange(exchange: { userMessage: MessageRow; reply: MessageRow }): MessageExchange {
  return { user_message: toMessage(exchange.userMessage), assistant_message: toMessage(exchange.reply) };
}

type Branch = components["schemas"]["ConversationBranch"];

export function toBranch(row: BranchRow): Branch {
  return { leaf_id: row.leaf.id, fork_point_id: row.forkPointId, message_count: row.messageCount, last_message: toMessage(row.leaf), active: row.active };
}
