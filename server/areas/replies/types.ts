import type { MessageReservation } from "../../quota/usage.ts";
import type { CardContext } from "../cards/index.ts";
import type { ApiError } from "../../toolkit/http/errors.ts";
import type { RetrievedChunk } from "../knowledge/index.ts";
import type { components } from "../../../generated/openapi.d.ts";
import type { ChatTurn, ConnectionEndpoint, FinishReason, ModelOptions, ToolCall, ToolCallDelta, TokenUsage } from "../../toolkit/providers/llm/types.ts";

type PersonaModelSettings = components["schemas"]["PersonaModelSettings"];

/** Who replies: what the engine needs of a persona (a stored one, a draft version, a room member). */
export interface ReplyPersona {
  id: string;
  /** What `{{char}}` (and `<BOT>`, `<CHAR>`) stands for in the persona's texts. */
  name: string;
  model: string;
  instructions: string;
  /** The owner's sampling defaults (a stored persona's `model_settings`), used when the request brings no options of its own. */
  model_settings?: PersonaModelSettings;
  /**
   * The replying user's own provider connection the persona runs on for them (bring your own key),
   * read by the caller's statement; its `contextWindow`, when set, is the budget's window instead
   * of the model's (issue 40).
   */
  connection?: ReplyConnection | undefined;
}

/**
 * An earlier message of the exchange, as the model's context sees it. A greeting is one of them, the
 * oldest: a conversation's stored one, or the opening a source without stored messages puts there
 * (docs/adr/0283-the-reply-engine-knows-no-greeting-it-is-the-history-s-first-turn.md).
 */
export interface PastTurn {
  /** Lets the engine leave out the input itself when it is stored already and read back as history. */
  id?: string;
  /** `tool`: a tool's result, only in a client's history (the OpenAI-compatible endpoint). */
  role: "user" | "assistant" | "tool";
  content: string;
  /** Its token count when known (stored with the message), so history is not re-tokenised. */
  tokens?: number;
  /** An assistant turn's tool calls (a client's history). */
  toolCalls?: ToolCall[];
  /** A `tool` turn: the call it answers. */
  toolCallId?: string;
}

/** What a reply is built on besides the persona and the input. */
export interface ReplyContext {
  /** Earlier messages, newest first; as many as fit the budget are used. */
  history: PastTurn[];
  /** Knowledge excerpts for the input, best first; the ones that fit are put in and cited. */
  knowledge: RetrievedChunk[];
  /** A rolling summary of the messages before `history` (long chats), put right after the instructions. */
  summary?: string;
  /** The persona's character card, when it was imported from one (the engine loads it). */
  card?: CardContext;
  /**
   * The caller's own system text (an OpenAI-compatible client's `system` messages), put right after
   * the persona's instructions.
   */
  system?: string[];
  /**
   * A client's turns after the new user message, kept in place at the end of the context: a system
   * instruction, tool calls and their results, and last perhaps an assistant turn whose text the
   * reply continues (a prefill).
   */
  trailing?: ChatTurn[];
}

/**
 * Where the context comes from: a conversation's messages, a room's, the messages a caller sent
 * (studio test chat, the OpenAI-compatible endpoint). `load` runs while the quota is reserved;
 * `signal` aborts when the reservation is refused or the caller stops. A load that throws gives the
 * quota back and its error reaches the caller of `beginReply`.
 */
export interface ContextSource {
  load(input: string, signal: AbortSignal): Promise<ReplyContext>;
}

/** A knowledge chunk a reply used, as stored with the reply. */
export interface Citation {
  chunk_id: string;
  document_id: string;
  filename: string;
  chunk_index: number;
  similarity: number;
}

/**
 * The user's message. Ids are UUIDv7 made by the engine, so the events name exactly what the sink
 * stored; `createdAt` is when the engine took the input.
 */
export interface InputRecord {
  id: string;
  role: "user";
  content: string;
  tokens: number;
  createdAt: Date;
}

/** The persona's reply, complete. */
export interface ReplyRecord {
  id: string;
  role: "assistant";
  content: string;
  tokens: number;
  createdAt: Date;
  /** The model that answered (the provider's name for it when it says). */
  model: string;
  /** The registry model that answered: the persona's, or its fallback's when it failed before answering. */
  modelId: string;
  /** The persona's model when it failed before answering and `modelId` is its fallback. */
  fallbackFrom?: string;
  /** It ran on the user's own provider connection: it cost the server nothing. */
  ownKey: boolean;
  /** What it cost at the registry's prices, in nano-USD (0 on the user's own key). */
  costNanos: number;
  usage: TokenUsage;
  citations: Citation[];
  /** Ended early by the `stop` signal: `content` is what the model had produced until then. */
  stopped?: boolean;
  /** Why the model stopped (`stop` when it did not say). */
  finishReason: FinishReason;
  /** The tools the model called (only when the request offered tools). */
  toolCalls?: ToolCall[];
}

/**
 * Where results are stored: a conversation's messages, a room's, nowhere (studio test chat). The
 * engine calls `store` with the input alone (streamed, before the model is asked), the reply alone,
 * or both together (whole replies, so that a failure stores nothing); each call is one atomic write.
 */
export interface ReplySink {
  /**
   * Stores the messages. A sink that ends the reply's quota lease in the same statement (the
   * lease is the reply's id) answers `{ leaseSettled: true }`, and the engine sends no statement of
   * its own for it.
   */
  store(messages: readonly (InputRecord | ReplyRecord)[]): Promise<void | { leaseSettled: true }>;
  /**
   * No reply will be stored: records why (an outbox event). `inputId` is the input's id when it is
   * stored, null when nothing was. A failure here is logged, not raised.
   */
  failed(error: ApiError, inputId: string | null): Promise<void>;
}

/**
 * What a reply yields: `delta`s, then exactly one `done` or `error`, then nothing. `done` comes
 * after everything is stored. `error` comes after the quota was given back and the sink told.
 */
export type ReplyEvent =
  | { type: "delta"; content: string }
  | { type: "tool_call"; call: ToolCallDelta }
  | { type: "done"; input: InputRecord; reply: ReplyRecord }
  | { type: "error"; error: ApiError; inputId: string | null };

export interface ReplyRequest {
  /** The user the reply counts against: one message of their monthly quota. */
  userId: string;
  persona: ReplyPersona;
  context: ContextSource;
  /**
   * The user's new message: its text, or the message itself when it is stored already (a retry of a
   * failed reply); a stored input is not stored again and is left out of the history.
   */
  input: string | InputRecord;
  sink: ReplySink;
  /**
   * `stream`: the model's text as it is produced, one delta per fragment; the input is stored while
   * the model is asked and stays if the reply fails. `whole`: the model answers in one piece (one
   * delta); input and reply are stored together, so a failure stores nothing.
   */
  mode: "stream" | "whole";
  /** The persona's card context, when the caller started reading it already (beside its own statement). */
  card?: Promise<CardContext | undefined>;
  /**
   * Stops the reply (a client that left, a stop button): the model call is cancelled, no reply is
   * stored, the quota is given back. An `ApiError` as the abort reason is what `error` and the sink
   * are told; any other reason reads as a generic stop.
   */
  signal?: AbortSignal;
  /**
   * Ends the reply early by choice (a stop button): the model call is cancelled, and what it had
   * produced is stored as the reply, marked `stopped`, and counted like any reply.
   */
  stop?: AbortSignal;
  /**
   * The message already reserved against the user's quota by the caller's own statement (the
   * conversations area reads its context and reserves in one round trip); the engine then reserves
   * nothing itself and gives this one back when the reply fails.
   */
  reserved?: MessageReservation;
  /** A smaller cap on the reply's tokens than the server's own (an OpenAI client's `max_tokens`). */
  maxOutputTokens?: number;
  /** How the model samples and what it may do: the persona's defaults with a client's own values over them. */
  options?: ModelOptions;
  /**
   * What `{{user}}` (and `<USER>`) stands for: the person the persona answers. Default: `userId`'s
   * display name, else username (read only when a text of the persona names the user). A room
   * passes the sender's name.
   */
  userName?: string;
}

/** A user's own connection as a reply runs on it. */
export type ReplyConnection = ConnectionEndpoint & { contextWindow?: number | undefined };

/** A reply that is ready to run: the quota is reserved and the context loaded. Iterate it once. */
export interface Reply extends AsyncIterable<ReplyEvent> {
  /** Gives the quota back when the caller decides not to run the reply after all (before iterating). */
  cancel(): Promise<void>;
}
