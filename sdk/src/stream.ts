import { createParser, type EventSourceMessage } from "eventsource-parser";
import { ConnectionError, StreamError, TimeoutError } from "./errors.ts";
import { anySignal } from "./signal.ts";
import type { Schemas } from "./types.ts";

/** The events of a chat stream, typed from the contract's `ChatStream*` schemas. */
export type ChatStreamEvent =
  | ({ type: "delta" } & Schemas["ChatStreamDelta"])
  | ({ type: "done" } & Schemas["ChatStreamDone"])
  | ({ type: "error" } & Schemas["ChatStreamError"]);

const EVENT_TYPES = new Set(["delta", "done", "error"]);

/** Starts the request; rejects with the typed error when the service refuses before streaming. */
export type OpenStream = (signal: AbortSignal) => Promise<ReadableStream<Uint8Array>>;

/**
 * A streamed chat reply. Iterate it for typed events, or call `text()` for the whole reply. The
 * request starts at once; errors the service answers before streaming (404, 402, 409, ...) are
 * thrown by the first `next()` or by `text()`.
 *
 * A connection that breaks before `done` throws ConnectionError: send again with the same
 * `idempotencyKey` and the service reuses the stored user message (or replays a finished reply).
 *
 * @example
 * const stream = client.conversations.stream(conversation.id, { content: "Hello!" });
 * for await (const event of stream) {
 *   if (event.type === "delta") process.stdout.write(event.content);
 * }
 * console.log("stored as", stream.finalMessageId);
 */
export class ChatStream implements AsyncIterable<ChatStreamEvent> {
  /** The key the message was sent with; reuse it to retry this very message. */
  readonly idempotencyKey: string;
  #final: Schemas["ChatStreamDone"] | undefined;
  readonly #controller = new AbortController();
  readonly #userSignal: AbortSignal | undefined;
  readonly #body: Promise<ReadableStream<Uint8Array>>;
  readonly #idleTimeout: number;
  #started = false;
  #aborted = false;

  constructor(open: OpenStream, options: { idempotencyKey: string; idleTimeout: number; signal?: AbortSignal | undefined }) {
    this.idempotencyKey = options.idempotencyKey;
    this.#idleTimeout = options.idleTimeout;
    this.#userSignal = options.signal;
    this.#body = open(anySignal([options.signal, this.#controller.signal]));
    // Observed here so that a stream nobody reads does not raise an unhandled rejection.
    this.#body.catch(() => undefined);
  }

  /** Id of the stored assistant message, once `done` has arrived. */
  get finalMessageId(): string | undefined {
    return this.#final?.message_id;
  }

  /** The whole `done` event (message id, citations, usage), once it has arrived. */
  get final(): Schemas["ChatStreamDone"] | undefined {
    return this.#final;
  }

  /** Stops the stream: iteration ends quietly and the service aborts the model call. */
  abort(): void {
    this.#aborted = true;
    this.#controller.abort(new DOMException("The chat stream was aborted", "AbortError"));
  }

  /**
   * The whole reply, once it is complete.
   * @throws StreamError when the stream ends with an `error` event (no reply was stored)
   * @throws ConnectionError when it ends, or is aborted, before `done`
   */
  async text(): Promise<string> {
    let text = "";
    for await (const event of this) {
      if (event.type === "delta") text += event.content;
      if (event.type === "error") throw new StreamError({ code: event.code, message: event.message });
    }
    if (this.#final === undefined) throw new ConnectionError("The chat stream ended before its reply was complete");
    return text;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<ChatStreamEvent, void, undefined> {
    if (this.#started) throw new Error("A ChatStream can be read only once");
    this.#started = true;
    let body: ReadableStream<Uint8Array>;
    try {
      body = await this.#body;
    } catch (error) {
      if (this.#aborted) return;
      throw error;
    }
    const reader = body.getReader();
    const decoder = new TextDecoder();
    const queue: ChatStreamEvent[] = [];
    // Comment lines (the keep-alive) reach no callback we register, so they are skipped.
    const parser = createParser({ onEvent: (message) => pushEvent(queue, message) });
    let idle: ReturnType<typeof setTimeout> | undefined;
    let timedOut = false;
    try {
      for (;;) {
        clearTimeout(idle);
        idle = setTimeout(() => {
          timedOut = true;
          reader.cancel().catch(() => undefined);
        }, this.#idleTimeout);
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (error) {
          if (this.#aborted) return;
          if (this.#userSignal?.aborted) throw this.#userSignal.reason;
          throw new ConnectionError("The chat stream broke off", error);
        } finally {
          // Only the wait for the server counts: time the caller spends on an event is its own.
          clearTimeout(idle);
        }
        if (chunk.done) {
          if (this.#aborted) return;
          if (timedOut) throw new TimeoutError(`The chat stream sent nothing for ${this.#idleTimeout} ms`);
          parser.feed(decoder.decode());
        } else {
          parser.feed(decoder.decode(chunk.value, { stream: true }));
        }
        while (queue.length > 0) {
          const event = queue.shift()!;
          if (event.type === "done") {
            const { type: _type, ...done } = event;
            this.#final = done;
          }
          yield event;
          if (event.type !== "delta") return;
        }
        if (chunk.done) throw new ConnectionError("The chat stream ended before done or error");
      }
    } finally {
      clearTimeout(idle);
      reader.cancel().catch(() => undefined);
    }
  }
}

/** Turns an SSE message into a typed event; unknown event names (from a newer service) are skipped. */
function pushEvent(queue: ChatStreamEvent[], message: EventSourceMessage): void {
  if (!message.event || !EVENT_TYPES.has(message.event)) return;
  let data: unknown;
  try {
    data = JSON.parse(message.data);
  } catch {
    return;
  }
  queue.push({ ...(data as object), type: message.event } as ChatStreamEvent);
}
