import type { Request } from "express";
import { v7 as uuidv7 } from "uuid";
import { reserveMessage, type MessageReservation } from "../billing/usage.ts";
import { outboxRow, recordEvent } from "../events/outbox.ts";
import { ApiError } from "../http/errors.ts";
import { idempotentOutcomeOf, REPLAYED } from "../http/idempotency.ts";
import { SSEWriter } from "../http/sse.ts";
import { retrieveForChat, type RetrievedChunk } from "../knowledge/retrieval.ts";
import { requireVisiblePersona } from "../personas/service.ts";
import type { PersonaRow } from "../personas/store.ts";
import { countTokens } from "../providers/llm/tokens.ts";
import { UpstreamError, type TokenUsage } from "../providers/llm/types.ts";
import type { Services } from "../services.ts";
import { assembleContext } from "./context.ts";
import { requireOwnConversation } from "./service.ts";
import { findMessage, insertMessages, recentMessages, type ConversationRow, type MessageRow } from "./store.ts";
import { enqueueTitle } from "./title-job.ts";
import { toMessage } from "./views.ts";

/** Recent messages read to fill the context budget; older ones would not fit any sane budget. */
const HISTORY_WINDOW = 200;

/** What a streamed send records for retries with its Idempotency-Key. */
type StreamOutcome = { outcome: "done"; user_message_id: string; assistant_message_id: string } | { outcome: "failed"; user_message_id: string };

interface Turn {
  conversation: ConversationRow;
  persona: PersonaRow;
  reservation: MessageReservation;
  /** Recent messages, newest first. */
  history: MessageRow[];
  knowledge: RetrievedChunk[];
}

/**
 * What every send needs before the model is called: ownership, the quota, the persona, the history
 * and the knowledge for `content`. Independent reads run together, so the model is asked after two
 * database round trips rather than five. The quota reservation is given back if a later check fails.
 */
async function beginTurn(services: Services, userId: string, conversationId: string, content: string): Promise<Turn> {
  const [owned, reserved] = await Promise.allSettled([requireOwnConversation(services, userId, conversationId), reserveMessage(services, userId)]);
  if (owned.status === "rejected") {
    if (reserved.status === "fulfilled") await reserved.value.release();
    throw owned.reason;
  }
  if (reserved.status === "rejected") throw reserved.reason;
  const conversation = owned.value;
  const reservation = reserved.value;
  try {
    const [persona, history, knowledge] = await Promise.all([
      // The persona may have been made private since the conversation started.
      requireVisiblePersona(services, userId, conversation.persona_id).catch((error: unknown) => {
        if (error instanceof ApiError && error.status === 404) {
          throw new ApiError(404, "not_found", "The persona of this conversation is no longer available");
        }
        throw error;
      }),
      recentMessages(services.db.knex, conversation.id, HISTORY_WINDOW),
      retrieveKnowledge(services, conversation, content),
    ]);
    return { conversation, persona, reservation, history, knowledge };
  } catch (error) {
    await reservation.release();
    throw error;
  }
}

/** The model's request for a reply to `content`, with history and knowledge fitted to the budget. */
function prepareRequest(services: Services, turn: Turn, content: string, excludeId?: string) {
  const { llm } = services.config;
  const context = assembleContext({
    instructions: turn.persona.instructions,
    greeting: turn.persona.greeting_message,
    history: excludeId ? turn.history.filter((message) => message.id !== excludeId) : turn.history,
    userMessage: content,
    knowledge: turn.knowledge,
    budget: llm.contextTokens - llm.maxOutputTokens,
  });
  return {
    request: { model: turn.persona.model, messages: context.turns, maxOutputTokens: llm.maxOutputTokens, purpose: "reply" as const },
    citations: context.used,
  };
}

/** Knowledge is a help, not a precondition: a failing retrieval is logged and the reply goes on without it. */
async function retrieveKnowledge(services: Services, conversation: ConversationRow, query: string): Promise<RetrievedChunk[]> {
  if (services.config.knowledgeContextChunks === 0) return [];
  try {
    return await retrieveForChat(services, {
      userId: conversation.user_id,
      personaId: conversation.persona_id,
      query,
      limit: services.config.knowledgeContextChunks,
    });
  } catch (error) {
    services.log.warn({ err: error, conversationId: conversation.id }, "knowledge retrieval failed; replying without it");
    return [];
  }
}

function newMessage(turn: Turn, role: "user" | "assistant", content: string, at: Date, extra: Partial<MessageRow> = {}): MessageRow {
  return {
    id: uuidv7(),
    conversation_id: turn.conversation.id,
    user_id: turn.conversation.user_id,
    persona_id: turn.persona.id,
    role,
    content,
    content_tokens: countTokens(content),
    model: null,
    input_tokens: null,
    output_tokens: null,
    citations: null,
    created_at: at,
    ...extra,
  };
}

function replyMessage(turn: Turn, content: string, model: string, usage: TokenUsage, citations: RetrievedChunk[], at: Date): MessageRow {
  return newMessage(turn, "assistant", content, at, {
    model,
    input_tokens: usage.inputTokens,
    output_tokens: usage.outputTokens,
    citations: citations.map(({ chunk_id, document_id, filename, chunk_index, similarity }) => ({ chunk_id, document_id, filename, chunk_index, similarity })),
  });
}

/** Stores messages with their `message.created` events in one statement, then asks for a title. */
async function storeMessages(services: Services, turn: Turn, messages: MessageRow[]): Promise<void> {
  const at = messages.at(-1)!.created_at;
  const events = messages.map((message) =>
    outboxRow({
      userId: turn.conversation.user_id,
      type: "message.created",
      data: { conversation_id: turn.conversation.id, message_id: message.id, role: message.role, content: message.content, persona_id: turn.persona.id },
      at,
    }),
  );
  await insertMessages(services.db.knex, turn.conversation, messages, events, at);
  // Only after the first reply: a title job queued again on every reply would restart its backoff.
  const firstReply = messages.some((message) => message.role === "assistant") && !turn.history.some((message) => message.role === "assistant");
  if (turn.conversation.title === null && firstReply) await enqueueTitle(services, turn.conversation.id);
}

async function recordFailure(services: Services, turn: Turn, error: ApiError, userMessageId: string | null): Promise<void> {
  await recordEvent(services.db.knex, {
    userId: turn.conversation.user_id,
    type: "message.failed",
    data: { conversation_id: turn.conversation.id, persona_id: turn.persona.id, user_message_id: userMessageId, code: error.code, message: error.message },
    at: services.now(),
  }).catch((failure: unknown) => services.log.error({ err: failure }, "could not record a message.failed event"));
}

/** What the client is told when the model provider fails; never the provider's own text, which may carry secrets. */
function upstreamFailure(error: unknown): ApiError {
  if (error instanceof UpstreamError) {
    return new ApiError(502, "upstream_error", error.message);
  }
  return new ApiError(500, "internal_error", "The reply could not be generated");
}

/**
 * Blocking send: the reply is generated first, then the user message and the reply are stored in
 * one transaction. A provider failure stores nothing, gives the quota back and answers 502.
 */
export async function sendMessage(services: Services, userId: string, conversationId: string, content: string) {
  const turn = await beginTurn(services, userId, conversationId, content);
  const sentAt = services.now();
  let completion;
  let citations: RetrievedChunk[];
  try {
    const prepared = prepareRequest(services, turn, content);
    citations = prepared.citations;
    completion = await services.llm.complete(prepared.request);
  } catch (error) {
    await turn.reservation.release();
    const failure = upstreamFailure(error);
    if (failure.status === 500) services.log.error({ err: error }, "reply generation failed");
    await recordFailure(services, turn, failure, null);
    throw failure;
  }
  const userMessage = newMessage(turn, "user", content, sentAt);
  const reply = replyMessage(turn, completion.content, completion.model, completion.usage, citations, services.now());
  try {
    await storeMessages(services, turn, [userMessage, reply]);
  } catch (error) {
    await turn.reservation.release();
    throw error;
  }
  return { user_message: toMessage(userMessage), assistant_message: toMessage(reply) };
}

/**
 * Streamed send. The user message is stored before the model is called, so it survives a failure;
 * deltas are written as the provider produces them; the reply is stored before `done`. A failure
 * or a client that leaves gives the quota back and stores no reply. With an Idempotency-Key a
 * retry replays a finished exchange, or reuses the stored user message of a failed one.
 */
export async function streamMessage(services: Services, req: Request, userId: string, conversationId: string, content: string): Promise<void> {
  const res = req.res!;
  const idempotent = idempotentOutcomeOf(req);
  const previous = idempotent?.previous as StreamOutcome | undefined;
  if (previous?.outcome === "done") return replayStream(services, req, userId, conversationId, previous);

  const turn = await beginTurn(services, userId, conversationId, content);
  let userMessage: MessageRow | undefined;
  try {
    if (previous?.outcome === "failed") {
      if (!(await idempotent!.reclaim())) throw new ApiError(409, "conflict", "A request with this Idempotency-Key is still in progress");
      userMessage = await findMessage(services.db.knex, turn.conversation.id, previous.user_message_id);
    }
  } catch (error) {
    await turn.reservation.release();
    throw error;
  }
  // The user message is stored while the model is asked: the first delta need not wait for it.
  let storing = Promise.resolve();
  if (!userMessage) {
    userMessage = newMessage(turn, "user", content, services.now());
    storing = storeMessages(services, turn, [userMessage]);
    storing.catch(() => undefined);
  }

  const sse = new SSEWriter(res, { keepAliveMs: services.config.streamKeepAliveMs });
  const userMessageId = userMessage.id;
  let text = "";
  try {
    const prepared = prepareRequest(services, turn, content, userMessageId);
    let usage: TokenUsage | undefined;
    for await (const chunk of services.llm.stream({ ...prepared.request, signal: sse.signal })) {
      if (chunk.type === "delta") {
        text += chunk.content;
        sse.event("delta", { content: chunk.content });
      } else {
        usage = chunk.usage;
      }
    }
    await storing;
    if (sse.signal.aborted) throw sse.signal.reason;
    usage ??= { inputTokens: 0, outputTokens: countTokens(text) };
    const reply = replyMessage(turn, text, prepared.request.model, usage, prepared.citations, services.now());
    await storeMessages(services, turn, [reply]);
    await idempotent?.record({ outcome: "done", user_message_id: userMessageId, assistant_message_id: reply.id } satisfies StreamOutcome);
    sse.event("done", { message_id: reply.id });
  } catch (error) {
    await turn.reservation.release().catch((failure: unknown) => services.log.error({ err: failure }, "could not give back a message quota"));
    const aborted = sse.signal.aborted;
    const failure = aborted ? new ApiError(500, "internal_error", "The client disconnected before the reply was complete") : upstreamFailure(error);
    if (!aborted && failure.status === 500) services.log.error({ err: error }, "streamed reply failed");
    if (aborted) req.log.info({ conversationId, receivedChars: text.length }, "client disconnected; upstream call aborted");
    const stored = await storing.then(() => true, () => false);
    await recordFailure(services, turn, failure, stored ? userMessageId : null);
    await idempotent?.record({ outcome: "failed", user_message_id: userMessageId } satisfies StreamOutcome)
      .catch((failure2: unknown) => services.log.error({ err: failure2 }, "could not record a failed stream"));
    sse.event("error", { code: failure.code, message: failure.message });
  } finally {
    sse.close();
  }
}

/** A retry of a finished streamed send: the stored reply as one delta, then the same done. */
async function replayStream(services: Services, req: Request, userId: string, conversationId: string, previous: Extract<StreamOutcome, { outcome: "done" }>) {
  const conversation = await requireOwnConversation(services, userId, conversationId);
  const reply = await findMessage(services.db.knex, conversation.id, previous.assistant_message_id);
  if (!reply) throw new ApiError(404, "not_found", "The reply this Idempotency-Key produced no longer exists");
  req.res!.set(REPLAYED, "true");
  const sse = new SSEWriter(req.res!, { keepAliveMs: services.config.streamKeepAliveMs });
  sse.event("delta", { content: reply.content });
  sse.event("done", { message_id: reply.id });
  sse.close();
}
