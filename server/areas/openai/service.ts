import type { components } from "../../../generated/openapi.d.ts";
import { heldMessage, messageQuota, planLimitExceeded } from "../../quota/usage.ts";
import { cardContextFromRow } from "../cards/index.ts";
import { conversationReply } from "../conversations/index.ts";
import { requireOwnConversation } from "../conversations/index.ts";
import { ApiError } from "../../toolkit/http/errors.ts";
import type { ModelOptions } from "../../toolkit/providers/llm/types.ts";
import { findPersonaByModelName, listOwnPersonas, personaByModelNameSql, ratingsShownTo, type PersonaRow } from "../personas/index.ts";
import { beginReply, inputTooLong, unreservedMessage, type ReplyConnection } from "../replies/index.ts";
import { openConnection, replyConnectionBindings } from "../models/index.ts";
import { modelRegistry } from "../../toolkit/models/index.ts";
import { personaKnowledge } from "../replies/index.ts";
import type { ContextSource, Reply, ReplySink } from "../replies/index.ts";
import type { Services } from "../../toolkit/services.ts";
import { modelNotFound, openaiRefusal } from "./errors.ts";
import { readMessages, type ClientExchange } from "./messages.ts";
import { completionParameters, refuseBeyondModel } from "./parameters.ts";
import { loadCompletionStart } from "./store.ts";

type CompletionRequest = components["schemas"]["OpenAIChatCompletionRequest"];

/** OpenAI's model list has no paging: the newest this many of the caller's personas are listed. */
export const MODEL_LIST_CAP = 1000;

/** The caller's personas as models, of the ratings the caller is shown (issue 41: the lists' one rule). */
export async function listModels(services: Services, userId: string): Promise<PersonaRow[]> {
  const [page, ratings] = await Promise.all([listOwnPersonas(services, userId, "created_at", { limit: MODEL_LIST_CAP, offset: 0 }), ratingsShownTo(services, userId)]);
  return page.rows.filter((persona) => ratings.includes(persona.content_rating));
}

/** A persona the caller may chat with (their own or a public one), by id, handle or `<username>/<handle>`; anything else is `model_not_found`. */
export async function requireModel(services: Services, userId: string, model: string): Promise<PersonaRow> {
  const persona = await findPersonaByModelName(services, userId, model);
  if (!persona) throw modelNotFound(model);
  return persona;
}

/** A completion ready to run: the reply, and the conversation it is stored in (if any). */
export interface Completion {
  reply: Reply;
  persona: PersonaRow;
  conversationId: string | null;
}

/** Nothing is stored for a stateless completion. */
const nowhere: ReplySink = { store: async () => {}, failed: async () => {} };

/**
 * Checks a completion request and begins its reply through the reply engine, with the client's
 * messages as the history. Refusals come out as thrown errors before anything runs (400, 404,
 * 402 for the quota); from then on failures are the reply's `error` event.
 *
 * One statement finds the persona and, when it is there, reserves the message and reads the
 * persona's knowledge flag and card (`loadCompletionStart`); the refusals that need the persona
 * come after it and give the reservation back, in the order they had before the reservation
 * moved into that statement: the request's and the conversation's refusals before the quota's.
 */
export async function beginCompletion(
  services: Services,
  userId: string,
  request: CompletionRequest & { conversationId?: string | undefined },
  options: { mode: "stream" | "whole"; signal?: AbortSignal },
): Promise<Completion> {
  const exchange = readMessages(request.messages);
  // OpenAI's own refusal of a prompt over the model's context, before anything is reserved.
  const tooLong = inputTooLong(services.config.llm, [exchange.input, ...exchange.trailing.map((turn) => turn.content)].join("\n"));
  if (tooLong) throw openaiRefusal(400, "context_length_exceeded", tooLong.message, "messages");
  const quota = messageQuota(services, userId);
  const start = await loadCompletionStart(services.db.knex, {
    userId,
    persona: personaByModelNameSql(services, userId, request.model),
    quota,
    databaseKind: services.db.kind,
    connection: replyConnectionBindings(services, userId),
  });
  const { persona } = start;
  if (!persona) throw modelNotFound(request.model);
  // A reply on the caller's own key that the quota exempts reserved nothing (issue 40).
  const reserved = start.reserved !== null ? heldMessage(services, userId, start.period_start, quota.lease.replyId) : start.quota_exempt ? unreservedMessage(quota.lease.replyId) : undefined;
  let checked: { modelOptions: ModelOptions; maxTokens: number | undefined; sink: ReplySink };
  let connection: ReplyConnection | undefined;
  try {
    connection = start.connection ? await openConnection(services, start.connection) : undefined;
    checked = await checkAgainstPersona(services, userId, persona, exchange, request, connection);
    if (!reserved) throw planLimitExceeded("messagesPerMonth", start.plan, start.messages_limit, start.used);
  } catch (error) {
    await reserved?.release().catch((failure: unknown) => services.log.error({ err: failure }, "could not give back a message quota"));
    throw error;
  }
  const context: ContextSource = {
    async load(input, signal) {
      // Read with the completion's one statement: retrieval only when the persona has knowledge.
      const knowledge = start.has_knowledge ? await personaKnowledge(services, { userId, personaId: persona.id, input, signal }) : [];
      // The greeting opens the exchange as a conversation's first message does, unless the client
      // sent an opening of its own (its history is the conversation then).
      const opening = exchange.opensWithAssistant || persona.greeting_message === null ? [] : [{ role: "assistant" as const, content: persona.greeting_message }];
      return { history: [...exchange.history, ...opening], knowledge, system: exchange.system, trailing: exchange.trailing };
    },
  };
  const reply = await beginReply(services, {
    userId,
    persona: { id: persona.id, name: persona.name, model: persona.model, instructions: persona.instructions, connection },
    context,
    // The card context, read by the completion's statement.
    card: Promise.resolve(cardContextFromRow(start.card)),
    reserved,
    input: exchange.input,
    sink: checked.sink,
    mode: options.mode,
    ...(options.signal ? { signal: options.signal } : {}),
    ...(checked.maxTokens ? { maxOutputTokens: checked.maxTokens } : {}),
    options: checked.modelOptions,
  });
  return { reply, persona, conversationId: request.conversationId ?? null };
}

/**
 * The refusals that need the persona (its model settings, whether it allows the client's system
 * messages, the conversation being its), and where the exchange is stored.
 */
async function checkAgainstPersona(
  services: Services,
  userId: string,
  persona: PersonaRow,
  exchange: ClientExchange,
  request: CompletionRequest & { conversationId?: string | undefined },
  connection: ReplyConnection | undefined,
): Promise<{ modelOptions: ModelOptions; maxTokens: number | undefined; sink: ReplySink }> {
  const { options: modelOptions, maxTokens } = completionParameters(request, persona.model_settings);
  const refused = services.providers.llm.refuses?.(modelOptions);
  if (refused) throw openaiRefusal(400, "unsupported", refused.message, refused.option === "tools" ? "tools" : refused.option);
  // What the persona's model cannot do or take (its capabilities, its context): refused as OpenAI refuses.
  refuseBeyondModel(modelRegistry(services.config.llm), persona.model, modelOptions, [exchange.input, ...exchange.trailing.map((turn) => turn.content)].join("\n"), connection);
  const clientSystem = exchange.system.length > 0 || exchange.trailing.some((turn) => turn.role === "system");
  if (clientSystem && !persona.allow_client_system_messages) {
    throw openaiRefusal(400, "system_messages_not_allowed", "This persona's owner does not allow system messages from clients", "messages");
  }
  if (request.conversationId) refuseUnstorable(exchange.trailing.length > 0, modelOptions.tools !== undefined);
  const sink = request.conversationId ? await conversationSink(services, userId, persona, request.conversationId) : nowhere;
  return { modelOptions, maxTokens, sink };
}

/**
 * A conversation stores the user's new message and the persona's text reply: an exchange that ends
 * elsewhere (a prefill, a closing instruction, tool results) or may end in tool calls has no such
 * pair to store.
 */
function refuseUnstorable(endsAfterInput: boolean, offersTools: boolean): void {
  if (endsAfterInput) {
    throw openaiRefusal(400, "unsupported", "With conversation_id the last message must be the user's: the new message and the reply are stored", "conversation_id");
  }
  if (offersTools) throw openaiRefusal(400, "unsupported", "Tools cannot be used with conversation_id: tool calls are not stored in a conversation", "tools");
}

/** The caller's own conversation with this persona stores the exchange; any other is 404. */
async function conversationSink(services: Services, userId: string, persona: PersonaRow, conversationId: string): Promise<ReplySink> {
  const refused = openaiRefusal(404, "conversation_not_found", `No conversation ${conversationId} of yours with this persona`, "conversation_id");
  let conversation;
  try {
    conversation = await requireOwnConversation(services, userId, conversationId);
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) throw refused;
    throw error;
  }
  if (conversation.persona_id !== persona.id) throw refused;
  return conversationReply(services, conversation, persona.id).sink;
}
