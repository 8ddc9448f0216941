import { countTokens } from "../../toolkit/providers/llm/tokens.ts";
import { personaKnowledge } from "../replies/index.ts";
import type { ContextSource, PastTurn, ReplySink } from "../replies/index.ts";
import type { Services } from "../../toolkit/services.ts";
import { announceRoomEvents } from "./events.ts";
import { insertRoomMessagesWithEvents, recentRoomMessages, type NewRoomEvent, type RoomMessageRow, type RoomMessageView, type RoomPersonaRow } from "./store.ts";
import { toRoomMessage } from "./views.ts";

/** Recent room messages read for a reply's context; the engine keeps as many as fit its budget. */
const HISTORY_WINDOW = 100;

/**
 * How a persona replies in a room through the reply engine: the room's recent messages are the
 * context, each attributed by name (the persona's own as its turns, everyone else's as what was
 * said to it), and the reply is stored as the persona's room message, priced and billed to
 * `senderId`, the member whose post it answers (docs/adr/0375). `stored` collects what the sink
 * wrote, so the send can answer it.
 */
export function roomReply(
  services: Services,
  roomId: string,
  persona: RoomPersonaRow,
  senderId: string,
  beforeStore: () => Promise<void>,
): { context: ContextSource; sink: ReplySink; stored: RoomMessageView[] } {
  const { knex } = services.db;
  const stored: RoomMessageView[] = [];
  const context: ContextSource = {
    async load(input, signal) {
      const [recent, knowledge] = await Promise.all([
        recentRoomMessages(knex, roomId, HISTORY_WINDOW),
        personaKnowledge(services, { userId: persona.creator_id, personaId: persona.persona_id, input, signal }),
      ]);
      const names = new Map<string, number>();
      // The persona's greeting opens what it has heard, as a conversation's first message does.
      const opening: PastTurn[] = persona.greeting_message === null ? [] : [{ role: "assistant", content: persona.greeting_message }];
      return { history: [...recent.map((message) => pastTurn(persona, message, names)), ...opening], knowledge };
    },
  };
  const sink: ReplySink = {
    async store(records) {
      const rows: RoomMessageRow[] = records.map((record) => ({
        id: record.id,
        room_id: roomId,
        sender_type: "persona" as const,
        user_id: null,
        persona_id: persona.persona_id,
        persona_name: persona.name,
        content: record.content,
        content_tokens: record.tokens,
        model: record.role === "assistant" ? record.model : null,
        input_tokens: record.role === "assistant" ? record.usage.inputTokens : null,
        output_tokens: record.role === "assistant" ? record.usage.outputTokens : null,
        created_at: record.createdAt,
        ...(record.role === "assistant"
          ? { model_id: record.modelId, fallback_from: record.fallbackFrom ?? null, own_key: record.ownKey, cost_nanos: record.costNanos, billed_user_id: senderId }
          : {}),
      }));
      const views = rows.map((row) => ({ ...row, sender_name: persona.name }));
      // The reply's last deltas go out before the reply itself is announced.
      await beforeStore();
      await storeRoomMessages(services, views);
      stored.push(...views);
    },
    async failed(error, inputId) {
      services.log.warn({ roomId, personaId: persona.persona_id, inputId, code: error.code }, "a persona's room reply failed");
    },
  };
  return { context, sink, stored };
}

/**
 * Stores messages of one room with their `message` events in one statement, then announces them.
 * The announcement follows the commit, as it would inside a transaction; were the process to die
 * between the two, subscribers would see the messages with the room's next event.
 */
export async function storeRoomMessages(services: Services, messages: RoomMessageView[]): Promise<void> {
  if (messages.length === 0) return;
  const roomId = messages[0]!.room_id;
  const events: NewRoomEvent[] = messages.map((message) => ({
    type: "message",
    data: toRoomMessage(message),
    message_id: message.id,
    ...(message.user_id ? { user_id: message.user_id } : {}),
  }));
  const lastId = await insertRoomMessagesWithEvents(services.db.knex, messages.map(({ sender_name: _name, ...row }) => row), events, services.now());
  await announceRoomEvents(services, roomId, lastId);
}

/**
 * A room message as a turn of the persona's context. An attributed message's tokens are its stored
 * count plus its author's name (counted once per name): close enough for the budget, and the
 * history is not tokenised again for every reply.
 */
function pastTurn(persona: RoomPersonaRow, message: RoomMessageView, nameTokens: Map<string, number>): PastTurn {
  if (message.sender_type === "persona" && message.persona_id === persona.persona_id) {
    return { id: message.id, role: "assistant", content: message.content, tokens: message.content_tokens };
  }
  let prefix = nameTokens.get(message.sender_name);
  if (prefix === undefined) nameTokens.set(message.sender_name, (prefix = countTokens(attributed(message.sender_name, ""))));
  return { id: message.id, role: "user", content: attributed(message.sender_name, message.content), tokens: prefix + message.content_tokens };
}

/** A message as a persona reads it in a group: who said it, then what. */
export function attributed(name: string, content: string): string {
  return `${name}: ${content}`;
}
