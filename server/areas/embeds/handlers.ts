import type { components } from "../../../generated/openapi.d.ts";
import { hasMoreBody, pageWindow } from "../../toolkit/http/paging.ts";
import { HANDLED, type Handler, type HandlerMap } from "../../toolkit/http/router.ts";
import { takeStreamPlace } from "../../toolkit/http/stream-limits.ts";
import { followGeneration } from "../conversations/index.ts";
import { consumeVoiceLimit, sendSpeech } from "../voice/index.ts";
import { requireGuest } from "./access.ts";
import { beginGuestReply, guestTranscript, replyToSpeak, stopGuestReply } from "./guest-chat.ts";
import { createGuest } from "./guests.ts";
import { pageHandlers } from "./page-handlers.ts";
import { getOwnerSettings, updateOwnerSettings } from "./settings.ts";
import { requireOwnPersona } from "../personas/index.ts";
import { pageEmbedConversations } from "./store.ts";
import { toEmbedConversation, toEmbedSettings, toGeneration, toTranscriptMessage } from "./views.ts";

// The owner's embed settings and the guest operations of the embed's chat page (spec/embeds.tsp);
// the loader, the chat page and its script are in page-handlers.ts.

const GUEST_HEADER = "x-embed-guest";

type VoiceId = components["schemas"]["VoiceId"];

const persona_embeds_get: Handler<"persona_embeds_get"> = async ({ services, principal, params }) => ({
  status: 200,
  body: toEmbedSettings(await getOwnerSettings(services, principal.userId, params.id), services.config),
});

const persona_embeds_update: Handler<"persona_embeds_update"> = async ({ services, principal, params, body }) => ({
  status: 200,
  body: toEmbedSettings(await updateOwnerSettings(services, principal.userId, params.id, body), services.config),
});

const persona_embeds_conversations: Handler<"persona_embeds_conversations"> = async ({ services, principal, params, query }) => {
  const persona = await requireOwnPersona(services, principal.userId, params.id);
  const window = pageWindow(query);
  const page = await pageEmbedConversations(services.db.knex, persona.id, window);
  return { status: 200, body: hasMoreBody(page, window, toEmbedConversation) };
};

const embeds_create_guest: Handler<"embeds_create_guest"> = async ({ services, params, req }) => {
  const guest = await createGuest(services, req, params.persona_id);
  return { status: 201, body: { token: guest.token, guest_id: guest.guestId, persona_id: guest.personaId } };
};

const embeds_transcript: Handler<"embeds_transcript"> = async ({ services, params, req }) => {
  const access = await requireGuest(services, req, params.persona_id, req.get(GUEST_HEADER));
  const { conversationId, messages } = await guestTranscript(services, access);
  return { status: 200, body: { conversation_id: conversationId, data: messages.map(toTranscriptMessage) } };
};

/** The visitor's message and the reply's stream, framed as the conversations' streamed send is. */
const embeds_stream: Handler<"embeds_stream"> = async ({ services, params, body, req, res, log }) => {
  const access = await requireGuest(services, req, params.persona_id, req.get(GUEST_HEADER));
  // Open streams are counted per visitor, as they are per user elsewhere.
  takeStreamPlace(services, res, `embed-guest:${access.guest.id}`);
  const send = await beginGuestReply(services, req, access, body.content, log);
  if (send.kind !== "follow") throw new Error("A visitor's send without an Idempotency-Key cannot replay");
  await followGeneration(services, res, send.generation, 0, send.live);
  return HANDLED;
};

const embeds_stop: Handler<"embeds_stop"> = async ({ services, params, req }) => {
  const access = await requireGuest(services, req, params.persona_id, req.get(GUEST_HEADER));
  return { status: 200, body: toGeneration(await stopGuestReply(services, access, params.generation_id)) };
};

/** The reply in the persona's voice, streamed (chunked) as it is synthesised, as `voice_tts` does. */
const embeds_speech: Handler<"embeds_speech"> = async ({ services, params, body, req, res, log }) => {
  const access = await requireGuest(services, req, params.persona_id, req.get(GUEST_HEADER));
  const text = await replyToSpeak(services, req, access, body.message_id);
  await consumeVoiceLimit(services, "voice_tts", access.persona.creator_id, res);
  await sendSpeech(services, res, { text, voice_id: access.persona.voice_id as VoiceId }, log);
  return HANDLED;
};

export const handlers = {
  persona_embeds_get,
  persona_embeds_update,
  persona_embeds_conversations,
  embeds_create_guest,
  embeds_transcript,
  embeds_stream,
  embeds_stop,
  embeds_speech,
  ...pageHandlers,
} satisfies Partial<HandlerMap>;
