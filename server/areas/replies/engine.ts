import { v7 as uuidv7 } from "uuid";
import { reserveMessage, type MessageReservation } from "../../quota/usage.ts";
import { getUser } from "../auth/index.ts";
import { cardContextOf, type CardContext } from "../cards/index.ts";
import { DATABASE_RETRY_AFTER_SECONDS, isDatabaseUnavailable } from "../../toolkit/db/unavailable.ts";
import { internalError, providerFailure, serviceUnavailable } from "../../toolkit/http/error-catalogue.ts";
import { ApiError } from "../../toolkit/http/errors.ts";
import { modelRegistry, type ModelBudget } from "../../toolkit/models/index.ts";
import { countChatTokensAs, countTokens, countTokensAs } from "../../toolkit/providers/llm/tokens.ts";
import type { ChatRequest, FinishReason, ModelRoute, ToolCall, TokenUsage } from "../../toolkit/providers/llm/types.ts";
import { ToolCallCollector } from "./tool-calls.ts";
import { settingsOptions } from "./model-settings.ts";
import { UpstreamError } from "../../toolkit/providers/errors.ts";
import type { Services } from "../../toolkit/services.ts";
import { assembleContext } from "./context.ts";
import { inputTooLong } from "./input-limit.ts";
import { screenReply } from "../../toolkit/moderation.ts";
import { fillMacros, mentionsUser, type MacroNames } from "./macros.ts";
import type { Citation, InputRecord, PastTurn, Reply, ReplyContext, ReplyEvent, ReplyRecord, ReplyRequest } from "./types.ts";

/**
 * Gets a reply ready: reserves one message of the user's quota while the context loads (one round
 * trip for both), then answers a `Reply` to iterate. Throws what must be refused before anything
 * runs: 400 for an input that cannot fit the context beside the instructions (before anything is
 * reserved; callers check it first, naming their own field), 402 when the quota is used up, or the
 * context source's own error; either way nothing stays reserved. From here on every failure is an
 * `error` event, never a throw.
 */
export async function beginReply(services: Services, request: ReplyRequest): Promise<Reply> {
  const text = typeof request.input === "string" ? request.input : request.input.content;
  // The persona's model's own limit (or its connection's): at most the server's, which callers checked.
  const tooLong = inputTooLong(limitOf(services, request), text);
  if (tooLong) {
    await request.reserved?.release();
    throw tooLong;
  }
  // The user's name only when a text of the persona names the user; read beside the rest.
  const userNamed = request.userName !== undefined || mentionsUser(request.persona.instructions);
  const naming = userNamed ? macroUser(services, request) : undefined;
  naming?.catch(() => undefined);
  // A refused quota stops the load, so an over-quota send costs no embeddings call.
  const refused = new AbortController();
  const signal = request.signal ? AbortSignal.any([request.signal, refused.signal]) : refused.signal;
  const reserving = request.reserved ? Promise.resolve(request.reserved) : reserveMessage(services, request.userId);
  reserving.catch(() => refused.abort());
  const loading = (async () => {
    // The card's lorebook is read beside the context (or already by the caller), so a reply waits for neither in turn.
    const [context, card] = await Promise.all([request.context.load(text, signal), request.card ?? cardContextOf(services, request.persona.id)]);
    const names: MacroNames = { char: request.persona.name, user: (await naming) ?? (needsUser(card, context.history) ? await macroUser(services, request) : "") };
    return { ...(card ? { ...context, card } : context), names };
  })();
  const [reserved, loaded] = await Promise.allSettled([reserving, loading]);
  if (reserved.status === "rejected") throw reserved.reason;
  if (loaded.status === "rejected") {
    await reserved.value.release();
    throw loaded.reason;
  }
  const reservation = reserved.value;
  let started = false;
  return {
    cancel: () => reservation.release(),
    [Symbol.asyncIterator]() {
      if (started) throw new Error("A reply runs once");
      started = true;
      return run(services, request, reservation, loaded.value);
    },
  };
}

/**
 * Whom `{{user}}` names: the caller's `userName`, else the user's display name, else their username
 * (docs/adr/0285-card-macros-are-filled-when-a-reply-is-built-stored-text-keeps-them.md).
 */
async function macroUser(services: Services, request: Pick<ReplyRequest, "userId" | "userName">): Promise<string> {
  if (request.userName !== undefined) return request.userName;
  const user = await getUser(services, request.userId);
  return user.display_name?.trim() || user.username;
}

/** Whether a text the persona's card or its past replies hold names the user (only then is the name read). */
function needsUser(card: CardContext | undefined, history: ReplyContext["history"]): boolean {
  if (card) return true;
  return history.some((turn) => turn.role === "assistant" && mentionsUser(turn.content));
}

/** The budget of a reply: its persona's model's (the smallest of it and its fallbacks'), or the user's connection's window. */
function budgetOf(services: Services, request: Pick<ReplyRequest, "persona">): ModelBudget {
  return modelRegistry(services.config.llm).budget(request.persona.model, request.persona.connection);
}

/** The input limit of a reply's model, named after it when the registry is a models file. */
function limitOf(services: Services, request: Pick<ReplyRequest, "persona">) {
  const registry = modelRegistry(services.config.llm);
  const budget = budgetOf(services, request);
  return registry.source === "file" ? { ...budget, model: registry.resolve(request.persona.model).id } : budget;
}

/** What a reply runs on: the loaded context and the names its macros stand for. */
type LoadedContext = ReplyContext & { names: MacroNames };

async function* run(services: Services, request: ReplyRequest, reservation: MessageReservation, context: LoadedContext): AsyncGenerator<ReplyEvent> {
  const { signal, sink } = request;
  const input = typeof request.input === "string" ? inputRecord(request.input, services.now()) : request.input;
  const inputStoredBefore = typeof request.input !== "string";
  const streaming = request.mode === "stream";
  let storingInput: Promise<unknown> | undefined;
  let ended = false;
  try {
    const { call, citations } = modelRequest(services, request, context, input);
    // Which model answered: the persona's, a fallback's, or the user's own connection (router.ts).
    let route: ModelRoute | undefined;
    call.onRoute = (served) => {
      route = served;
    };
    let text = "";
    let model = call.model;
    let usage: TokenUsage | undefined;
    let finishReason: FinishReason = "stop";
    let toolCalls: ToolCall[] = [];
    let stopped = false;
    if (streaming) {
      // The model is asked first and the input stored while it answers: the request leaves before
      // the statement is built and sent, and the first delta waits for neither.
      const collector = new ToolCallCollector();
      const chunks = services.providers.llm.stream(call)[Symbol.asyncIterator]();
      const first = chunks.next();
      if (!inputStoredBefore) {
        storingInput = sink.store([input]);
        storingInput.catch(() => undefined);
      }
      try {
        for await (const chunk of continued(first, chunks)) {
          if (chunk.type === "delta") {
            text += chunk.content;
            yield { type: "delta", content: chunk.content };
          } else if (chunk.type === "tool_call") {
            collector.add(chunk.call);
            yield { type: "tool_call", call: chunk.call };
          } else {
            usage = chunk.usage;
            finishReason = chunk.finishReason ?? "stop";
          }
          if (request.stop?.aborted) break;
        }
      } catch (error) {
        if (!request.stop?.aborted || signal?.aborted) throw error;
      }
      // A stop that came after the last delta changes nothing: the reply is whole.
      stopped = request.stop?.aborted === true && usage === undefined;
      if (stopped) {
        // Counted as the model that answered counts (its family's encoding), for what the reply cost.
        const { tokenizer } = modelRegistry(services.config.llm).resolve(route?.modelId ?? request.persona.model);
        usage = { inputTokens: countChatTokensAs(tokenizer, call.messages), outputTokens: countTokensAs(tokenizer, text) };
      }
      toolCalls = collector.calls();
    } else {
      const completion = await services.providers.llm.complete(call);
      ({ content: text, model, usage } = completion);
      finishReason = completion.finishReason ?? "stop";
      toolCalls = completion.toolCalls ?? [];
      yield { type: "delta", content: text };
    }
    await storingInput;
    if (signal?.aborted) throw signal.reason;
    usage ??= { inputTokens: 0, outputTokens: countTokens(text) };
    // Issue 41: with MODERATION_CHECK_REPLIES the reply (a stopped one's part too) is checked before it is stored.
    await screenReply(services, text, usage);
    const cost = replyCost(services, request, route, usage);
    const reply: ReplyRecord = {
      // Decided with the reservation: its lease sweep looks for this id.
      id: reservation.replyId,
      role: "assistant",
      content: text,
      tokens: countTokens(text),
      createdAt: services.now(),
      model,
      ...cost,
      usage,
      citations,
      ...(stopped ? { stopped } : {}),
      finishReason,
      ...(toolCalls.length > 0 ? { toolCalls } : {}),
    };
    const receipt = await sink.store(streaming || inputStoredBefore ? [reply] : [input, reply]);
    ended = true;
    // Not awaited: the reply is stored, and a lease left behind only finds it stored.
    if (!receipt?.leaseSettled) reservation.settle().catch((failure: unknown) => services.log.warn({ err: failure }, "could not settle a message's quota lease"));
    yield { type: "done", input, reply };
  } catch (error) {
    ended = true;
    yield await fail(error);
  } finally {
    // The caller stopped iterating before the end (`break`, `return()`): a stop like an abort.
    if (!ended) await fail(new Error("The caller stopped reading the reply"), true);
  }

  async function fail(error: unknown, abandoned = false): Promise<ReplyEvent> {
    await reservation.release().catch((failure: unknown) => services.log.error({ err: failure }, "could not give back a message quota"));
    const stopped = abandoned || signal?.aborted === true;
    const failure = stopped ? stopFailure(signal?.reason) : upstreamFailure(error);
    if (!stopped && failure.status === 500) services.log.error({ err: error }, "reply failed");
    const inputStored = inputStoredBefore || (storingInput !== undefined && (await storingInput.then(() => true, () => false)));
    const inputId = inputStored ? input.id : null;
    await sink.failed(failure, inputId).catch((failure2: unknown) => services.log.error({ err: failure2 }, "could not record a failed reply"));
    return { type: "error", error: failure, inputId };
  }
}

/** The rest of `iterator` after its `first` result, which was asked for already; closes it when left early. */
async function* continued<T>(first: Promise<IteratorResult<T>>, iterator: AsyncIterator<T>): AsyncGenerator<T> {
  let done = false;
  try {
    for (let result = await first; !result.done; result = await iterator.next()) yield result.value;
    done = true;
  } finally {
    if (!done) await iterator.return?.();
  }
}

function inputRecord(content: string, at: Date): InputRecord {
  return { id: uuidv7(), role: "user", content, tokens: countTokens(content), createdAt: at };
}

/**
 * The model's request: persona, knowledge and history fitted to the budget, and what it cites. The
 * persona's texts (instructions, the card's entries and samples) and its past replies (a
 * greeting among them) are read with their macros filled; the user's messages, the
 * client's system text and knowledge as they are.
 */
function modelRequest(services: Services, request: ReplyRequest, context: LoadedContext, input: InputRecord): { call: ChatRequest & { model: string }; citations: Citation[] } {
  const budget = budgetOf(services, request);
  const fill = (text: string) => fillMacros(text, context.names);
  const assembled = assembleContext({
    instructions: fill(request.persona.instructions),
    ...(context.system?.length ? { system: context.system } : {}),
    // A stored input read back with the history would be in the context twice.
    history: context.history.filter((turn) => turn.id === undefined || turn.id !== input.id).map((turn) => filledTurn(turn, fill)),
    userMessage: input.content,
    ...(context.trailing?.length ? { trailing: context.trailing } : {}),
    knowledge: context.knowledge,
    ...(context.summary ? { summary: context.summary } : {}),
    budget: budget.budget,
    ...(context.card ? { card: context.card, fill } : {}),
  });
  return {
    call: {
      model: request.persona.model,
      messages: assembled.turns,
      maxOutputTokens: Math.min(budget.maxOutputTokens, request.maxOutputTokens ?? request.persona.model_settings?.max_tokens ?? budget.maxOutputTokens),
      purpose: "reply",
      options: request.options ?? settingsOptions(request.persona.model_settings),
      ...(request.persona.connection ? { connection: request.persona.connection } : {}),
      ...(callSignal(request) ? { signal: callSignal(request)! } : {}),
    },
    citations: assembled.used.map(({ chunk_id, document_id, filename, chunk_index, similarity }) => ({ chunk_id, document_id, filename, chunk_index, similarity })),
  };
}

/** A past reply with its macros filled (its stored token count no longer holds then); other turns as they are. */
function filledTurn(turn: PastTurn, fill: (text: string) => string): PastTurn {
  if (turn.role !== "assistant") return turn;
  const content = fill(turn.content);
  if (content === turn.content) return turn;
  const { tokens: _stale, ...rest } = turn;
  return { ...rest, content };
}

/** What cancels the model call: the caller leaving, or a stop (which keeps the partial reply). */
function callSignal(request: ReplyRequest): AbortSignal | undefined {
  if (request.signal && request.stop) return AbortSignal.any([request.signal, request.stop]);
  return request.signal ?? request.stop;
}

/**
 * Which registry model answered and what it cost: the route the provider reported, else the
 * persona's model (a provider that reports none: the tests' fakes) on the connection it was given.
 * A reply on the user's own key costs the server nothing (docs/adr/0365).
 */
function replyCost(services: Services, request: ReplyRequest, route: ModelRoute | undefined, usage: TokenUsage): Pick<ReplyRecord, "modelId" | "fallbackFrom" | "ownKey" | "costNanos"> {
  const registry = modelRegistry(services.config.llm);
  const modelId = route?.modelId ?? registry.resolve(request.persona.model).id;
  const ownKey = route?.ownKey ?? request.persona.connection !== undefined;
  return { modelId, ...(route?.fallbackFrom ? { fallbackFrom: route.fallbackFrom } : {}), ownKey, costNanos: ownKey ? 0 : registry.cost(modelId, usage) };
}

/**
 * A message that counts against no quota: a reply on the user's own key that the operator does not
 * count (PROVIDER_CONNECTIONS_COUNT_QUOTA). `replyId` is the reply's id, as a reservation's lease's is.
 */
export function unreservedMessage(replyId: string = uuidv7()): MessageReservation {
  return { replyId, release: async () => {}, settle: async () => {} };
}

/**
 * What the caller is told when the model provider fails; never the provider's own text, which may
 * carry secrets. A database out of reach while the reply was stored (a failover) is a 503 to retry.
 */
function upstreamFailure(error: unknown): ApiError {
  if (error instanceof UpstreamError) return providerFailure(error);
  if (error instanceof ApiError && error.code === "reply_flagged") return error;
  if (isDatabaseUnavailable(error)) return serviceUnavailable("The database is unreachable; retry shortly", DATABASE_RETRY_AFTER_SECONDS);
  return internalError("The reply could not be generated");
}

function stopFailure(reason: unknown): ApiError {
  if (reason instanceof ApiError) return reason;
  return internalError("The reply was stopped before it was complete");
}
