import type { Attributes, Context, Span } from "@opentelemetry/api";
import type { EmbeddingsProvider } from "../providers/embeddings/types.ts";
import type { ChatCompletion, ChatModelProvider, ChatRequest, ChatStreamChunk, TokenUsage } from "../providers/llm/types.ts";
import { activeTracing, type ActiveTracing } from "./active.ts";
import { readInSpan, spanFailed, spanOptions } from "./spans.ts";

// The model calls as spans, in the GenAI semantic conventions' terms (gen_ai.*): which model, for
// what, the tokens and why it stopped, and for a stream the time to its first text. Never the
// messages or the reply: a trace backend is no place for people's conversations. The HTTP call to
// an OpenAI-compatible server is a child span of the fetch instrumentation, which also sends the
// `traceparent` upstream.

function requestAttributes(provider: string, request: ChatRequest, stream: boolean): Attributes {
  return {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": provider,
    "gen_ai.request.model": request.model,
    "gen_ai.request.stream": stream,
    ...(request.maxOutputTokens !== undefined ? { "gen_ai.request.max_tokens": request.maxOutputTokens } : {}),
    "persona.model.purpose": request.purpose ?? "reply",
  };
}

function usageAttributes(usage: TokenUsage, finishReason: string | undefined): Attributes {
  return {
    "gen_ai.usage.input_tokens": usage.inputTokens,
    "gen_ai.usage.output_tokens": usage.outputTokens,
    "gen_ai.response.finish_reasons": [finishReason ?? "stop"],
  };
}

/**
 * The chat model seen through spans while traces are on (`chat <model>`, a client span); the
 * provider itself with traces off. A stream's span runs from the first read to its end, and its
 * reads run inside the span, so the upstream HTTP call is its child.
 */
export function traceChatModel(provider: ChatModelProvider): ChatModelProvider {
  const tracing = activeTracing();
  if (!tracing) return provider;
  const { api, tracer } = tracing;
  return {
    name: provider.name,
    ...(provider.refuses ? { refuses: (options) => provider.refuses!(options) } : {}),
    complete: (request): Promise<ChatCompletion> =>
      tracer.startActiveSpan(`chat ${request.model}`, spanOptions(tracing, { kind: "client", attributes: requestAttributes(provider.name, request, false) }), async (span) => {
        try {
          const completion = await provider.complete(request);
          span.setAttributes({ "gen_ai.response.model": completion.model, ...usageAttributes(completion.usage, completion.finishReason) });
          return completion;
        } catch (error) {
          spanFailed(tracing, span, error);
          throw error;
        } finally {
          span.end();
        }
      }),
    stream: (request) => ({
      [Symbol.asyncIterator]: () => {
        const span = tracer.startSpan(`chat ${request.model}`, spanOptions(tracing, { kind: "client", attributes: requestAttributes(provider.name, request, true) }));
        const inSpan = api.trace.setSpan(api.context.active(), span);
        return tracedChunks(tracing, span, inSpan, api.context.with(inSpan, () => provider.stream(request)[Symbol.asyncIterator]()));
      },
    }),
  };
}

/** A stream's chunks passed through, each read inside `inSpan`; the first text is noted, and the span ends with the stream. */
function tracedChunks(tracing: ActiveTracing, span: Span, inSpan: Context, chunks: AsyncIterator<ChatStreamChunk>): AsyncIterator<ChatStreamChunk> {
  const startedAt = performance.now();
  let waiting = true;
  let answered = false;
  return readInSpan(tracing, span, inSpan, chunks, {
    onValue: (chunk) => {
      if (chunk.type === "usage") {
        // The usage is a stream's last chunk: the answer is whole, whether or not its reader reads on.
        answered = true;
        span.setAttributes(usageAttributes(chunk.usage, chunk.finishReason));
        return true;
      }
      if (waiting && chunk.type === "delta") {
        waiting = false;
        span.setAttribute("gen_ai.response.time_to_first_chunk", (performance.now() - startedAt) / 1000);
        span.addEvent("first_token");
      }
      return false;
    },
    // The reader stopped reading (a stop, a reply cut to its cap): before the usage chunk, the answer was not whole.
    onEnd: (early) => {
      if (early && !answered) span.setAttribute("persona.stopped_early", true);
    },
  });
}

/** The embeddings provider seen through spans while traces are on (`embeddings <model>`); the provider itself with traces off. */
export function traceEmbeddings(provider: EmbeddingsProvider): EmbeddingsProvider {
  const tracing = activeTracing();
  if (!tracing) return provider;
  return {
    name: provider.name,
    get model() {
      return provider.model;
    },
    embed: (texts, signal) => {
      const attributes = { "gen_ai.operation.name": "embeddings", "gen_ai.provider.name": provider.name, "gen_ai.request.model": provider.model, "persona.embeddings.inputs": texts.length };
      return tracing.tracer.startActiveSpan(`embeddings ${provider.model}`, spanOptions(tracing, { kind: "client", attributes }), async (span) => {
        try {
          const result = await provider.embed(texts, signal);
          span.setAttributes({ "gen_ai.response.model": result.model, "gen_ai.usage.input_tokens": result.inputTokens });
          return result;
        } catch (error) {
          spanFailed(tracing, span, error);
          throw error;
        } finally {
          span.end();
        }
      });
    },
  };
}
