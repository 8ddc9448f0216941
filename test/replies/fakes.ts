import type { ApiError } from "../../server/toolkit/http/errors.ts";
import type { RetrievedChunk } from "../../server/areas/knowledge/retrieval.ts";
import { UpstreamError } from "../../server/toolkit/providers/errors.ts";
import { abortError, type ChatCompletion, type ChatModelProvider, type ChatRequest, type ChatStreamChunk } from "../../server/toolkit/providers/llm/types.ts";
import type { ContextSource, InputRecord, PastTurn, ReplyRecord, ReplySink } from "../../server/areas/replies/types.ts";

/** What the fake model does for its next call. */
export interface Script {
  chunks?: string[];
  /** Throws an `UpstreamError` after this many chunks (0: before the first). */
  failAfter?: number;
  /** After the chunks, waits until the call's signal aborts, then ends as providers do: an AbortError. */
  holdUntilAborted?: boolean;
}

/** A chat model provider in memory: scripted replies, and every request it was given. */
export class ScriptedModel implements ChatModelProvider {
  readonly name = "scripted";
  readonly requests: ChatRequest[] = [];
  /** Whether a call's signal was aborted while the call ran. */
  sawAbort = false;
  #scripts: Script[] = [];

  next(script: Script): void {
    this.#scripts.push(script);
  }

  async complete(request: ChatRequest): Promise<ChatCompletion> {
    this.requests.push(request);
    const script = this.#take();
    if (script.failAfter !== undefined) throw new UpstreamError("The model provider answered 500");
    const content = (script.chunks ?? ["Hello."]).join("");
    return { content, model: `${request.model}-2025`, usage: { inputTokens: 11, outputTokens: 3 } };
  }

  async *stream(request: ChatRequest): AsyncIterable<ChatStreamChunk> {
    this.requests.push(request);
    const script = this.#take();
    const chunks = script.chunks ?? ["Hello", "."];
    for (const [i, content] of chunks.entries()) {
      if (script.failAfter === i) throw new UpstreamError("The model provider's stream broke");
      yield { type: "delta", content };
    }
    if (script.failAfter === chunks.length) throw new UpstreamError("The model provider's stream broke");
    if (script.holdUntilAborted && request.signal) {
      const signal = request.signal;
      if (!signal.aborted) await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      this.sawAbort = true;
      throw abortError(signal);
    }
    yield { type: "usage", usage: { inputTokens: 21, outputTokens: 4 } };
  }

  #take(): Script {
    return this.#scripts.shift() ?? {};
  }
}

/** A sink that keeps what it is given, in order, with a log shared with the test's event reader. */
export function recordingSink(log: string[], options: { failStore?: (messages: readonly (InputRecord | ReplyRecord)[]) => boolean } = {}) {
  const stored: (InputRecord | ReplyRecord)[][] = [];
  const failures: { error: ApiError; inputId: string | null }[] = [];
  const sink: ReplySink = {
    async store(messages) {
      log.push(`store ${messages.map((m) => m.role).join("+")}`);
      if (options.failStore?.(messages)) throw new Error("database unavailable");
      stored.push([...messages]);
    },
    async failed(error, inputId) {
      log.push("failed");
      failures.push({ error, inputId });
    },
  };
  return { sink, stored, failures };
}

/**
 * A context of fixed history and knowledge; `signals` keeps each load's signal. With `fail` the
 * load throws it; with `untilAborted` the load ends only when its signal aborts.
 */
export function fixedContext(history: PastTurn[] = [], knowledge: RetrievedChunk[] = [], options: { fail?: Error; untilAborted?: boolean } = {}) {
  const signals: AbortSignal[] = [];
  const context: ContextSource = {
    async load(_input, signal) {
      signals.push(signal);
      if (options.untilAborted) {
        if (!signal.aborted) await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
        throw signal.reason;
      }
      if (options.fail) throw options.fail;
      return { history, knowledge };
    },
  };
  return { context, signals };
}
