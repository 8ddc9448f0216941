import { Counter, Gauge, Histogram } from "prom-client";
import type { ChatCompletion, ChatModelProvider, ChatRequest, ChatStreamChunk, TokenUsage } from "../providers/llm/types.ts";
import { metricsOn, registry, SECONDS } from "./registry.ts";

// What the chat model and the streamed replies do: model calls and their outcomes, the wait for the
// first text, tokens, and how generations end.

const calls = new Counter({
  name: "persona_model_calls_total",
  help: "Chat model calls, by model, purpose (reply, title, greeting, summary) and outcome: ok, error (the provider failed), aborted (the caller's signal), stopped (the caller stopped reading).",
  labelNames: ["model", "purpose", "outcome"] as const,
  registers: [registry],
});

const callDurations = new Histogram({
  name: "persona_model_call_duration_seconds",
  help: "From asking the chat model to its answer's end (a stream's last chunk), by model and purpose.",
  labelNames: ["model", "purpose"] as const,
  buckets: [...SECONDS],
  registers: [registry],
});

const firstDelta = new Histogram({
  name: "persona_model_first_delta_seconds",
  help: "From asking the chat model for a streamed answer to its first text, by model.",
  labelNames: ["model"] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 20, 30, 60],
  registers: [registry],
});

const replyTokens = new Histogram({
  name: "persona_reply_tokens",
  help: "Output tokens per reply (purpose reply, as the provider counted them), by model.",
  labelNames: ["model"] as const,
  buckets: [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192],
  registers: [registry],
});

const tokens = new Counter({
  name: "persona_model_tokens_total",
  help: "Tokens the chat model read (input) and wrote (output), as the provider counted them, by model.",
  labelNames: ["model", "direction"] as const,
  registers: [registry],
});

type Outcome = "ok" | "error" | "aborted" | "stopped";

function ended(request: ChatRequest, outcome: Outcome, startedAt: number, usage: TokenUsage | undefined): void {
  const purpose = request.purpose ?? "reply";
  calls.inc({ model: request.model, purpose, outcome });
  callDurations.observe({ model: request.model, purpose }, (performance.now() - startedAt) / 1000);
  if (!usage) return;
  tokens.inc({ model: request.model, direction: "input" }, usage.inputTokens);
  tokens.inc({ model: request.model, direction: "output" }, usage.outputTokens);
  if (purpose === "reply") replyTokens.observe({ model: request.model }, usage.outputTokens);
}

const failureOf = (error: unknown): Outcome => ((error as { name?: string } | undefined)?.name === "AbortError" ? "aborted" : "error");

/**
 * The chat model provider, measured: the same provider seen through a wrapper that times each call
 * and counts its outcome and tokens. Wrapping the provider keeps the measuring out of the reply
 * path's own code; a stream is passed through by a plain iterator (one `then` per chunk), not
 * another async generator.
 */
export function measuredChatModel(provider: ChatModelProvider): ChatModelProvider {
  if (!metricsOn()) return provider;
  return {
    name: provider.name,
    ...(provider.refuses ? { refuses: (options) => provider.refuses!(options) } : {}),
    complete: async (request): Promise<ChatCompletion> => {
      const startedAt = performance.now();
      try {
        const completion = await provider.complete(request);
        ended(request, "ok", startedAt, completion.usage);
        return completion;
      } catch (error) {
        ended(request, failureOf(error), startedAt, undefined);
        throw error;
      }
    },
    stream: (request) => measuredStream(provider.stream(request), request),
  };
}

function measuredStream(source: AsyncIterable<ChatStreamChunk>, request: ChatRequest): AsyncIterable<ChatStreamChunk> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<ChatStreamChunk> {
      const startedAt = performance.now();
      const chunks = source[Symbol.asyncIterator]();
      let waiting = true;
      let usage: TokenUsage | undefined;
      let over = false;
      const end = (outcome: Outcome) => {
        if (over) return;
        over = true;
        ended(request, outcome, startedAt, usage);
      };
      return {
        next: () =>
          chunks.next().then(
            (result) => {
              if (result.done) end("ok");
              else if (result.value.type === "usage") usage = result.value.usage;
              else if (waiting && result.value.type === "delta") {
                waiting = false;
                firstDelta.observe({ model: request.model }, (performance.now() - startedAt) / 1000);
              }
              return result;
            },
            (error: unknown) => {
              end(failureOf(error));
              throw error;
            },
          ),
        return: (value?: unknown) => {
          // The caller stopped reading: a stop after the usage chunk is a whole answer.
          end(usage ? "ok" : "stopped");
          return chunks.return ? chunks.return(value) : Promise.resolve({ done: true as const, value: undefined });
        },
      };
    },
  };
}

const generations = new Counter({
  name: "persona_generations_total",
  help: "Streamed replies (generations) by how they ended: done, stopped (by the user, the partial reply kept), failed, lost (their process died; recorded by the next reader).",
  labelNames: ["outcome"] as const,
  registers: [registry],
});

for (const outcome of ["done", "stopped", "failed", "lost"]) generations.inc({ outcome }, 0);

/** When each generation running in this process started. */
const running = new Map<string, number>();

new Gauge({
  name: "persona_generations_running",
  help: "Streamed replies (generations) running in this process.",
  registers: [registry],
  collect() {
    this.set(running.size);
  },
});

new Gauge({
  name: "persona_generation_oldest_running_seconds",
  help: "How long the oldest generation running in this process has run (0 when none runs): one that runs for many minutes is stuck.",
  registers: [registry],
  collect() {
    let oldest = Infinity;
    for (const startedAt of running.values()) oldest = Math.min(oldest, startedAt);
    this.set(oldest === Infinity ? 0 : (performance.now() - oldest) / 1000);
  },
});

/** A generation started in this process (a one-line call in the generation registry). */
export function generationStarted(id: string): void {
  if (metricsOn()) running.set(id, performance.now());
}

/** A generation of this process ended, with the status recorded for it. */
export function generationEnded(id: string, status: string): void {
  if (!metricsOn()) return;
  running.delete(id);
  generations.inc({ outcome: status === "done" || status === "stopped" ? status : "failed" });
}

/** A generation whose process died was found and recorded failed (its lease ran out). */
export function generationLost(): void {
  if (metricsOn()) generations.inc({ outcome: "lost" });
}
