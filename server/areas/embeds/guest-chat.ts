import type { Request } from "express";
import { ApiError } from "../../toolkit/http/errors.ts";
import { notFound, rateLimited } from "../../toolkit/http/error-catalogue.ts";
import type { Logger } from "../../toolkit/logger.ts";
import type { Services } from "../../toolkit/services.ts";
import {
  createConversation, deleteConversation, findStoredReply, listMessages, stopGeneration, streamedSend,
} from "../conversations/index.ts";
import { embeddingOrigin, type GuestAccess } from "./access.ts";
import { countVisitorMessage, takeVisitorDailyMessage } from "./limits.ts";
import { spokenText } from "./spoken-text.ts";
import { conversationOfGuest, countVisitorMessage as countInConversation, insertEmbedConversation } from "./store.ts";

/**
 * A visitor's chat with an embedded persona. The visitor's conversation is a conversation of the
 * persona's owner (as a chat platform's channel is, in the integrations area): the owner's plan
 * pays for its messages, the owner reads, deletes and exports it like any of theirs, and it goes
 * with the owner's account. This area only remembers which conversation is which visitor's
 * (docs/adr/0317-guest-usage-counts-against-the-owner.md).
 */

/** How long a visitor whose owner's quota is used up is asked to wait: the owner may upgrade any time. */
const OWNER_QUOTA_RETRY_SECONDS = 3600;

/**
 * Whom `{{user}}` names in a visitor's replies: not the owner, whose conversation it is, but an
 * anonymous visitor the persona's card text can speak of (the chat page shows the greeting with "you").
 */
const VISITOR_NAME = "Visitor";

/** Messages a visitor's reopened chat shows. */
const TRANSCRIPT_MESSAGES = 50;

/** The visitor's conversation, started (as the owner's, with the persona's greeting) on its first message. */
async function conversationOf(services: Services, req: Request, access: GuestAccess): Promise<string> {
  const { knex } = services.db;
  const existing = await conversationOfGuest(knex, access.guest.id);
  if (existing) return existing.conversation_id;
  const site = embeddingOrigin(services, req)?.replace(/^https?:\/\//, "") ?? "a website";
  const conversation = await createConversation(services, access.persona.creator_id, {
    persona_id: access.persona.id,
    title: `Visitor on ${site}`.slice(0, 200),
  });
  const now = services.now();
  const recorded = await insertEmbedConversation(knex, {
    conversation_id: conversation.id,
    persona_id: access.persona.id,
    user_id: access.persona.creator_id,
    guest_id: access.guest.id,
    visitor_messages: 0,
    started_at: now,
    last_message_at: null,
  });
  if (recorded) return conversation.id;
  // The visitor's other first message made one meanwhile: keep that one.
  await deleteConversation(services, access.persona.creator_id, conversation.id).catch(() => undefined);
  const winner = await conversationOfGuest(knex, access.guest.id);
  if (!winner) throw notFound("Conversation");
  return winner.conversation_id;
}

const isStatus = (error: unknown, status: number) => error instanceof ApiError && error.status === status;

/**
 * Starts the reply to a visitor's message, as a streamed send of the owner's conversation. Counted
 * first per visitor and per address, then against the persona's daily cap (given back if the turn
 * is refused after all), then, by the turn itself, against the owner's monthly quota: its refusal
 * reaches the visitor as a 429 that tells nothing of the owner's plan.
 */
export async function beginGuestReply(services: Services, req: Request, access: GuestAccess, content: string, log: Logger) {
  await countVisitorMessage(services, req, access.guest.id);
  const daily = await takeVisitorDailyMessage(services, access.persona.id, access.settings.dailyMessageCap);
  const owner = access.persona.creator_id;
  try {
    let conversationId = await conversationOf(services, req, access);
    const send = (id: string) => streamedSend(services, { userId: owner, conversationId: id, content, key: undefined, log: log.child({ embed: access.persona.id }), userName: VISITOR_NAME });
    let started;
    try {
      started = await send(conversationId);
    } catch (error) {
      // The owner deleted the visitor's conversation meanwhile: the visitor starts a new one.
      if (!isStatus(error, 404) || (await conversationOfGuest(services.db.knex, access.guest.id))) throw error;
      conversationId = await conversationOf(services, req, access);
      started = await send(conversationId);
    }
    await countInConversation(services.db.knex, conversationId, services.now());
    return started;
  } catch (error) {
    await daily.giveBack();
    if (isStatus(error, 402)) throw rateLimited("This chat cannot answer more messages right now; try again later", OWNER_QUOTA_RETRY_SECONDS);
    throw error;
  }
}

/** The visitor's conversation so far, oldest first, without its greeting (the chat page shows it). */
export async function guestTranscript(services: Services, access: GuestAccess) {
  const mapped = await conversationOfGuest(services.db.knex, access.guest.id);
  if (!mapped) return { conversationId: null, messages: [] };
  const page = await listMessages(services, access.persona.creator_id, mapped.conversation_id, undefined, { limit: TRANSCRIPT_MESSAGES, offset: 0 });
  return { conversationId: mapped.conversation_id, messages: page.rows.filter((row) => row.depth > 0).reverse() };
}

/** Stops a running reply of the visitor's own conversation; any other generation is 404. */
export async function stopGuestReply(services: Services, access: GuestAccess, generationId: string) {
  const mapped = await conversationOfGuest(services.db.knex, access.guest.id);
  if (!mapped) throw notFound("Generation");
  return stopGeneration(services, access.persona.creator_id, mapped.conversation_id, generationId);
}

/** Longest text spoken at once (the text-to-speech operation's own bound). */
const SPOKEN_CHARACTERS = 5000;

/**
 * A reply of the visitor's conversation to speak: the persona's own reply (never the visitor's
 * message, nor any other text: the guest operation is no free text-to-speech), as words without
 * the markdown signs a voice would read out. Counted per visitor and per address like a message.
 */
export async function replyToSpeak(services: Services, req: Request, access: GuestAccess, messageId: string): Promise<string> {
  await countVisitorMessage(services, req, access.guest.id);
  const mapped = await conversationOfGuest(services.db.knex, access.guest.id);
  if (!mapped) throw notFound("Reply");
  const reply = await findStoredReply(services, access.persona.creator_id, mapped.conversation_id, messageId).catch((error: unknown) => {
    throw isStatus(error, 404) ? notFound("Reply") : error;
  });
  if (reply.role !== "assistant" || reply.depth === 0) throw notFound("Reply");
  const text = spokenText(reply.content).slice(0, SPOKEN_CHARACTERS).trim();
  if (!text) throw notFound("Reply");
  return text;
}
