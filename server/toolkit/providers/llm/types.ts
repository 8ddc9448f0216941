/** One turn of the context sent to a chat model. */
export interface ChatTurn {
  role: "system" | "user" | "assistant";
  content: string;
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
  /** Aborting it cancels the upstream call (a client that disconnected). */
  signal?: AbortSignal;
}

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
}

export interface ChatCompletion {
  content: string;
  model: string;
  usage: TokenUsage;
}

/** What a stream yields: text fragments as the model produces them, then the usage once. */
export type ChatStreamChunk = { type: "delta"; content: string } | { type: "usage"; usage: TokenUsage };

/**
 * A chat model provider. Both methods throw `UpstreamError` when the provider fails (HTTP error,
 * timeout, broken stream) and `AbortError`-named errors when `signal` aborts.
 */
export interface ChatModelProvider {
  /** Provider name for logs: `openai` or `local`. */
  readonly name: string;
  complete(request: ChatRequest): Promise<ChatCompletion>;
  stream(request: ChatRequest): AsyncIterable<ChatStreamChunk>;
}

/** What callers expect when their own signal ends a model call: an error named `AbortError`. */
export function abortError(signal: AbortSignal): Error {
  const error = new Error("The model call was aborted", { cause: signal.reason });
  error.name = "AbortError";
  return error;
}
