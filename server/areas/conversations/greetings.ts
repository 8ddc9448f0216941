import { v7 as uuidv7 } from "uuid";
import { getUser } from "../auth/index.ts";
import { alternateGreetingsOf } from "../cards/index.ts";
import { greetingNow, namesOfPersonas, type PersonaRow } from "../personas/index.ts";
import { fillMacros } from "../replies/index.ts";
import { countTokens } from "../../toolkit/providers/llm/tokens.ts";
import type { Services } from "../../toolkit/services.ts";
import type { ConversationRow, MessageRow } from "./store.ts";

/**
 * A conversation's greetings (issue 34, docs/adr/0280-the-greeting-is-the-conversation-s-first-stored-message.md):
 * the persona's greeting is stored as the first message of a new conversation, and a character
 * card's alternate greetings beside it as its alternatives (siblings with no parent, as regenerated
 * replies are siblings under their question), chosen with `select`. They sit at depth 0: the
 * exchange starts at depth 1, so the active path's length at its leaf, `message_count`, counts the
 * exchanged messages and no greeting; the activity rollups skip depth 0 too (migration 0027).
 */
export const GREETING_DEPTH = 0;

export const isGreeting = (message: Pick<MessageRow, "depth">): boolean => message.depth === GREETING_DEPTH;

/**
 * What a new conversation with `persona` opens with: its greeting (generated now when the job has
 * not written it yet: 502 when the model fails, before anything is stored), then its card's
 * alternate greetings in the card's order.
 */
export async function greetingsOf(services: Services, persona: Pick<PersonaRow, "id" | "greeting_message">): Promise<string[]> {
  const alternates = await alternateGreetingsOf(services, persona.id);
  return [await greetingNow(services, persona), ...alternates];
}

/**
 * The stored rows of a new conversation's greetings, the persona's greeting first: their UUIDv7 ids
 * are made in order, so with one `created_at` they are alternatives 0, 1, 2... as listed.
 */
export function greetingRows(conversation: Pick<ConversationRow, "id" | "user_id" | "persona_id">, texts: readonly string[], at: Date): MessageRow[] {
  return texts.map((content) => ({
    id: uuidv7(),
    conversation_id: conversation.id,
    user_id: conversation.user_id,
    persona_id: conversation.persona_id,
    role: "assistant",
    content,
    content_tokens: countTokens(content),
    model: null,
    input_tokens: null,
    output_tokens: null,
    citations: null,
    stopped: false,
    created_at: at,
    parent_id: null,
    depth: GREETING_DEPTH,
  }));
}

/**
 * Messages as their reader sees them: a greeting is stored as the card wrote it, macros and all
 * (stored text keeps them), and shown with `{{char}}` the persona's name and `{{user}}` the
 * reader's (the conversation's owner: display name, else username). Other messages come back as
 * they are; nothing is read unless a greeting is among them.
 */
export async function shownMessages<T extends MessageRow>(services: Services, userId: string, rows: T[]): Promise<T[]> {
  const greetings = rows.filter(isGreeting);
  if (greetings.length === 0) return rows;
  const [user, personas] = await Promise.all([getUser(services, userId), namesOfPersonas(services, greetings.map((row) => row.persona_id))]);
  const reader = user.display_name?.trim() || user.username;
  return rows.map((row) => {
    const char = isGreeting(row) ? personas.get(row.persona_id) : undefined;
    return char === undefined ? row : { ...row, content: fillMacros(row.content, { char, user: reader }) };
  });
}
