import OpenAI, { APIConnectionTimeoutError } from "openai";
import { OPENAI_BASE_URL, openaiClient, providerFailures } from "../openai-client.ts";
import type { Config } from "../../config.ts";
import type { Logger } from "../../logger.ts";
import { countChatTokensAs, countTokensAs, type TokenEncoding } from "./tokens.ts";
import { UpstreamError } from "../errors.ts";
import { abortError, type ChatCompletion, type ChatModelProvider, type ChatRequest, type ChatStreamChunk, type FinishReason, type TokenUsage } from "./types.ts";
import { completionChunks } from "./completion-chunks.ts";
import { toolCallsOf, upstreamBody } from "./openai-body.ts";

type Settings = Pick<Config["llm"], "baseUrl" | "apiKey" | "maxOutputTokens" | "timeoutMs" | "maxRetries">;

/** How a provider of the model registry differs from the chat settings' one (providers/llm/router.ts). */
export interface ProviderOptions {
  /** How its failures are reported (a message naming the model, not the chat settings). */
  failures?: (error: unknown) => UpstreamError;
  /** The model family's encoding, for the usage the provider does not report. */
  tokenizer?: TokenEncoding;
  /** Passed to every request (a user's connection: a dispatcher whose lookups the SSRF guard checks). */
  fetchOptions?: Record<string, unknown>;
}

/**
 * The longest reply taken from a provider: the contract's limit of a message's content. A provider
 * that ignores `max_tokens` (or never ends its stream) cannot make the service store, stream or
 * hold more; the rest is not read.
 */
export const MAX_REPLY_CHARS = 32_000;

/** At most `room` UTF-16 units of `text`, never ending in half a surrogate pair. */
function capped(text: string, room: number): string {
  if (text.length <= room) return text;
  const cut = text.slice(0, Math.max(0, room));
  return /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut;
}

/** The real provider: any OpenAI-compatible chat completions API, through the official package. */
export class OpenAIChatModel implements ChatModelProvider {
  readonly name = "openai";
  readonly #client: OpenAI;
  readonly #settings: Settings;
  readonly #isOpenAI: boolean;
  readonly #failure: (error: unknown) => UpstreamError;
  readonly #tokenizer: TokenEncoding;

  constructor(settings: Settings, log?: Logger, options: ProviderOptions = {}) {
    this.#settings = settings;
    this.#failure = options.failures ?? providerFailures("chat", settings.baseUrl, log);
    this.#isOpenAI = new URL(settings.baseUrl ?? OPENAI_BASE_URL).hostname === "api.openai.com";
    const client = openaiClient(settings);
    this.#client = options.fetchOptions ? client.withOptions({ fetchOptions: options.fetchOptions }) : client;
    this.#tokenizer = options.tokenizer ?? "o200k_base";
  }

  async complete(request: ChatRequest): Promise<ChatCompletion> {
    try {
      const response = await this.#client.chat.completions.create({ ...this.#body(request), stream: false }, { signal: request.signal });
      // The package trusts the body's shape; a broken provider's `{"choices": 42}` is no reply.
      const choice = Array.isArray(response.choices) ? response.choices[0] : undefined;
      const reply: unknown = choice ? (choice.message?.content ?? "") : undefined;
      if (typeof reply !== "string") throw new UpstreamError("The model provider's answer held no reply");
      const content = capped(reply, MAX_REPLY_CHARS);
      const toolCalls = toolCallsOf(choice?.message?.tool_calls);
      return {
        content,
        model: response.model || request.model,
        usage: usageOf(response.usage, request, content, this.#tokenizer),
        finishReason: finishReasonOf(choice?.finish_reason, content.length < reply.length),
        ...(toolCalls.length > 0 ? { toolCalls } : {}),
      };
    } catch (error) {
      throw this.#providerError(error, request.signal);
    }
  }

  async *stream(request: ChatRequest): AsyncIterable<ChatStreamChunk> {
    // The package's timeout ends when the response headers arrive; a stream that then stalls would
    // hang for ever. This watchdog aborts it after `timeoutMs` without a chunk.
    const stalled = new AbortController();
    const signal = request.signal ? AbortSignal.any([request.signal, stalled.signal]) : stalled.signal;
    let watchdog: NodeJS.Timeout | undefined;
    let content = "";
    let upstreamUsage: OpenAI.CompletionUsage | undefined;
    let finished = false;
    let finishReason: FinishReason | undefined;
    try {
      const response = await this.#client.chat.completions.create(
        { ...this.#body(request), stream: true, stream_options: { include_usage: true } },
        { signal },
      ).asResponse();
      watchdog = setTimeout(() => stalled.abort(), this.#settings.timeoutMs);
      for await (const chunk of completionChunks(response, signal)) {
        watchdog.refresh();
        if (chunk.usage) upstreamUsage = chunk.usage;
        const choice = chunk.choices[0];
        if (choice?.finish_reason) {
          finished = true;
          finishReason = finishReasonOf(choice.finish_reason, false);
        }
        for (const call of choice?.delta?.tool_calls ?? []) {
          yield {
            type: "tool_call",
            call: {
              index: call.index,
              ...(call.id ? { id: call.id } : {}),
              ...(call.function?.name ? { name: call.function.name } : {}),
              ...(call.function?.arguments ? { arguments: call.function.arguments } : {}),
            },
          };
        }
        const delta = choice?.delta?.content;
        if (typeof delta === "string" && delta) {
          const piece = capped(delta, MAX_REPLY_CHARS - content.length);
          content += piece;
          if (piece) yield { type: "delta", content: piece };
          // Time our consumer took does not count against the provider.
          watchdog.refresh();
          if (piece.length < delta.length) {
            // Leaving the loop closes the stream: the rest of the reply is never read.
            finished = true;
            finishReason = "length";
            break;
          }
        }
      }
    } catch (error) {
      throw this.#providerError(error, request.signal, stalled.signal);
    } finally {
      clearTimeout(watchdog);
    }
    // The iteration ends quietly when the request is aborted, so check why it ended.
    if (request.signal?.aborted) throw abortError(request.signal);
    if (stalled.signal.aborted) throw this.#failure(this.#timeoutError());
    // A stream closed cleanly but early (a proxy cut it) ends without a finish reason or usage.
    if (!finished && !upstreamUsage) throw this.#failure(new UpstreamError("The model provider's stream ended before the reply was complete"));
    yield { type: "usage", usage: usageOf(upstreamUsage, request, content, this.#tokenizer), finishReason: finishReason ?? "stop" };
  }

  #body(request: ChatRequest): OpenAI.ChatCompletionCreateParamsNonStreaming {
    return upstreamBody(request, { maxTokens: request.maxOutputTokens ?? this.#settings.maxOutputTokens, isOpenAI: this.#isOpenAI });
  }

  #timeoutError(): UpstreamError {
    return new UpstreamError(`The model provider did not answer within ${this.#settings.timeoutMs} ms`);
  }

  /** The error callers see: ours, never the upstream's text, naming the settings to change (see `providerFailures`). */
  #providerError(error: unknown, signal: AbortSignal | undefined, stalled?: AbortSignal): Error {
    if (signal?.aborted) return abortError(signal);
    if (stalled?.aborted || error instanceof APIConnectionTimeoutError) return this.#failure(this.#timeoutError());
    return this.#failure(error);
  }
}

/** The provider's finish reason in OpenAI's words; a reply cut to the service's own cap ended for `length`. */
function finishReasonOf(reason: string | null | undefined, cut: boolean): FinishReason {
  if (cut) return "length";
  return reason === "length" || reason === "tool_calls" || reason === "content_filter" ? reason : reason === "function_call" ? "tool_calls" : "stop";
}

/** The provider's own counts; what it does not report, counted in the model family's encoding. */
function usageOf(upstream: OpenAI.CompletionUsage | null | undefined, request: ChatRequest, content: string, tokenizer: TokenEncoding): TokenUsage {
  return {
    inputTokens: upstream?.prompt_tokens ?? countChatTokensAs(tokenizer, request.messages),
    outputTokens: upstream?.completion_tokens ?? countTokensAs(tokenizer, content),
  };
}
