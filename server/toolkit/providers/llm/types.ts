/** One turn of the context sent to a chat model. */
export interface ChatTurn {
  role: "system" | "user" | "assistant" | "tool";
  content: string;
  /** An assistant turn's calls of the request's tools. */
  toolCalls?: ToolCall[];
  /** A `tool` turn: the call it answers. */
  toolCallId?: string;
}

/** A call of one of the request's tools, as the model made it. */
export interface ToolCall {
  id: string;
  name: string;
  /** JSON text, as the model wrote it. */
  arguments: string;
}

/** A function the model may call. */
export interface ToolDefinition {
  name: string;
  description?: string;
  /** JSON Schema of the arguments. */
  parameters?: Record<string, unknown>;
  strict?: boolean | null;
}

/** The reply's form: text, any JSON object, or a JSON value matching a schema. */
export type ResponseFormat =
  | { type: "text" }
  | { type: "json_object" }
  | { type: "json_schema"; name: string; schema?: Record<string, unknown>; description?: string; strict?: boolean | null };

/**
 * How the model samples and what it may do, beyond the messages. Each is sent to the provider only
 * when set; a provider that cannot honour one refuses the request (`UnsupportedOption`), never
 * ignores it.
 */
export interface ModelOptions {
  temperature?: number;
  topP?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  /** The reply ends before the first of these (not included). */
  stop?: string[];
  seed?: number;
  responseFormat?: ResponseFormat;
  logitBias?: Record<string, number>;
  /** The end user, for the provider's abuse monitoring. */
  user?: string;
  tools?: ToolDefinition[];
  /** OpenAI's `tool_choice`, passed as given. */
  toolChoice?: unknown;
  parallelToolCalls?: boolean;
}

/** Why the model stopped: done (or a stop sequence), the token cap, to call tools, or filtered. */
export type FinishReason = "stop" | "length" | "tool_calls" | "content_filter";

/** A request option the provider cannot honour: refused before the model is asked. */
export class UnsupportedOption extends Error {
  readonly option: keyof ModelOptions;

  constructor(option: keyof ModelOptions, message: string) {
    super(message);
    this.name = "UnsupportedOption";
    this.option = option;
  }
}

export interface ChatRequest {
  model: string;
  messages: ChatTurn[];
  maxOutputTokens?: number;
  /**
   * What the call is for. Real providers ignore it (the instructions say it); the offline local
   * model uses it to answer in kind: a reply, a short conversation title, a persona's greeting, or
   * the rolling summary of a long conversation.
   */
  purpose?: "reply" | "title" | "greeting" | "summary";
  options?: ModelOptions;
  /** Aborting it cancels the upstream call (a client that disconnected). */
  signal?: AbortSignal;
  /**
   * A user's own provider connection (bring your own key): the call goes there with its key, and
   * nowhere else (no fallback to the server's models). `model` is then the registry model whose
   * name and limits apply unless the connection names its own.
   */
  connection?: ConnectionEndpoint;
  /** Told which registry model answers, once one does: the model's fallback when it failed before answering (router.ts). */
  onRoute?: (route: ModelRoute) => void;
}

/** Where a user's own connection reaches: an OpenAI-compatible API with their key. */
export interface ConnectionEndpoint {
  id: string;
  /** The user's name for it, in the messages of its failures. */
  name: string;
  baseUrl: string;
  apiKey: string | undefined;
  /** The model name to send; undefined: the registry model's own. */
  model: string | undefined;
  /** Changes when the connection does (its `updated_at`): a client made for an older version is not reused. */
  version: string;
}

/** Which model answered a call. */
export interface ModelRoute {
  /** The registry model that answered. */
  modelId: string;
  /** The registry model asked first, when it failed before answering and `modelId` is its fallback. */
  fallbackFrom?: string;
  /** It ran on the user's own connection. */
  ownKey: boolean;
}

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
}

export interface ChatCompletion {
  content: string;
  model: string;
  usage: TokenUsage;
  /** Absent: `stop`. */
  finishReason?: FinishReason;
  toolCalls?: ToolCall[];
}

/** A piece of a streamed tool call: `id` and `name` in its first piece, `arguments` text in pieces. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  name?: string;
  arguments?: string;
}

/**
 * What a stream yields: text fragments and tool-call pieces as the model produces them, then the
 * usage and why the model stopped, once.
 */
export type ChatStreamChunk =
  | { type: "delta"; content: string }
  | { type: "tool_call"; call: ToolCallDelta }
  | { type: "usage"; usage: TokenUsage; finishReason?: FinishReason };

/**
 * A chat model provider. Both methods throw `UpstreamError` when the provider fails (HTTP error,
 * timeout, broken stream) and `AbortError`-named errors when `signal` aborts.
 */
export interface ChatModelProvider {
  /** Provider name for logs: `openai` or `local`. */
  readonly name: string;
  complete(request: ChatRequest): Promise<ChatCompletion>;
  stream(request: ChatRequest): AsyncIterable<ChatStreamChunk>;
  /** The option this provider cannot honour, checked before anything is reserved; absent: it honours them all. */
  refuses?(options: ModelOptions): UnsupportedOption | undefined;
}

/** What callers expect when their own signal ends a model call: an error named `AbortError`. */
export function abortError(signal: AbortSignal): Error {
  const error = new Error("The model call was aborted", { cause: signal.reason });
  error.name = "AbortError";
  return error;
}
