import { createParser, type EventSourceMessage } from "eventsource-parser";
import { ConnectionError, StreamError, StreamResumeError, TimeoutError } from "./errors.ts";
import { responseMeta, type WithResponse } from "./response-meta.ts";
import { retryDelayMs } from "./retry.ts";
import { anySignal } from "./signal.ts";
import type { Schemas } from "./types.ts";

/** The events of a chat stream, typed from the contract's `ChatStream*` schemas. */
export type ChatStreamEvent =
  | ({ type: "delta" } & Schemas["ChatStreamDelta"])
  | ({ type: "done" } & Schemas["ChatStreamDone"])
  | ({ type: "error" } & Schemas["ChatStreamError"]);

const EVENT_TYPES = new Set(["start", "delta", "done", "error"]);
/** Reconnections in a row that bring no new event before the stream gives up (ADR 0307). */
const MAX_RESUMES = 5;

/** An answer that has started streaming: its body, and the Response whose body it is. */
export interface OpenedStream {
  body: ReadableStream<Uint8Array>;
  response: Response;
}
/** Starts the request; rejects with the typed error when the service refuses before streaming. */
export type OpenStream = (signal: AbortSignal) => Promise<OpenedStream>;
/** Reconnects to a generation, asking for the events after `lastEventId`. */
export type ResumeStream = (generationId: string, lastEventId: string | undefined, signal: AbortSignal) => Promise<OpenedStream>;
/** Asks the service to stop the generation. */
export type StopGeneration = (generationId: string) => Promise<Schemas["Generation"]>;

type WireEvent = ChatStreamEvent | ({ type: "start" } & Schemas["ChatStreamStart"]);

/**
 * A streamed chat reply. Iterate it for typed events, or call `text()` for the whole reply. The
 * request starts at once; errors the service answers before streaming (404, 402, 409, ...) are
 * thrown by the first `next()` or by `text()`.
 *
 * The reply is generated on the service whatever the connection does. A connection that breaks
 * before `done` is resumed by itself (the resume operation with `Last-Event-ID`, with backoff), so
 * no delta is lost or repeated: an event whose id is not past the last one handled is dropped. Only
 * a new event id counts as progress; after 5 reconnections in a row without one, iteration throws
 * StreamResumeError (a StreamError). A drop before the `start` event (no generation to resume yet)
 * throws ConnectionError.
 * `generationId` names the generation once the stream has started; `stop()` ends it early, keeping
 * the partial reply (the stream then ends with `done` and `stopped: true`).
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
  /** Aborts on abort() or the caller's signal. */
  readonly #signal: AbortSignal;
  readonly #opened: Promise<OpenedStream>;
  readonly #idleTimeout: number;
  readonly #resume: ResumeStream | undefined;
  readonly #stop: StopGeneration | undefined;
  #started = false;
  #aborted = false;
  #generationId: string | undefined;
  #lastEventId: string | undefined;
  #resumes = 0;

  constructor(
    open: OpenStream,
    options: {
      idempotencyKey: string;
      idleTimeout: number;
      signal?: AbortSignal | undefined;
      resume?: ResumeStream;
      stop?: StopGeneration;
      /** Known up front when following an existing generation. */
      generationId?: string;
      /** The event the caller has already: events up to it are dropped, as on a resume. */
      lastEventId?: string | undefined;
    },
  ) {
    this.#generationId = options.generationId;
    this.#lastEventId = options.lastEventId;
    this.idempotencyKey = options.idempotencyKey;
    this.#idleTimeout = options.idleTimeout;
    this.#userSignal = options.signal;
    this.#resume = options.resume;
    this.#stop = options.stop;
    this.#signal = anySignal([options.signal, this.#controller.signal]);
    this.#opened = open(this.#signal);
    // Observed here so that a stream nobody reads does not raise an unhandled rejection.
    this.#opened.catch(() => undefined);
  }

  /**
   * Waits for the service's answer to the opening request (its headers, before any event) and
   * gives this stream back with that Response, its request id and rate-limit state; read the
   * stream on from `data`. A refusal (NotFoundError, PlanLimitError, ...) rejects here, and is
   * thrown again by reading. Reconnections after a drop do not change what it gives.
   * @example
   * const { data: stream, requestId } = await client.conversations.stream(id, { content: "Hi" }).withResponse();
   * for await (const event of stream) if (event.type === "delta") process.stdout.write(event.content);
   */
  async withResponse(): Promise<WithResponse<this>> {
    const { response } = await this.#opened;
    return { data: this, ...responseMeta(response) };
  }

  /** The generation's id, once its `start` event has arrived: resume it elsewhere or stop it. */
  get generationId(): string | undefined {
    return this.#generationId;
  }

  /** How many times the stream reconnected after a drop. */
  get resumes(): number {
    return this.#resumes;
  }

  /**
   * Stops the generation on the service (from any process): the model call is aborted and the
   * partial reply stored, marked stopped; reading on gets its `done`. Answers the generation.
   * @throws Error before the stream has started (no generation id yet)
   */
  async stop(): Promise<Schemas["Generation"]> {
    if (!this.#generationId || !this.#stop) throw new Error("The chat stream has not started yet: nothing to stop");
    return this.#stop(this.#generationId);
  }

  /** Id of the stored assistant message, once `done` has arrived. */
  get finalMessageId(): string | undefined {
    return this.#final?.message_id;
  }

  /** The whole `done` event (message id, citations, usage), once it has arrived. */
  get final(): Schemas["ChatStreamDone"] | undefined {
    return this.#final;
  }

  /** Stops reading: iteration ends quietly; the reply is still generated and stored (see `stop()`). */
  abort(): void {
    this.#aborted = true;
    this.#controller.abort(new DOMException("The chat stream was aborted", "AbortError"));
  }

  /**
   * The whole reply, once it is complete.
   * @throws StreamError when the stream ends with an `error` event (no reply was stored)
   * @throws StreamResumeError when reconnecting after drops kept bringing nothing new
   * @throws ConnectionError when it ends, or is aborted, before `done` and cannot be resumed
   */
  async text(): Promise<string> {
    let text = "";
    for await (const event of this) {
      if (event.type === "delta") text += event.content;
      if (event.type === "error") {
        // The opening answer's headers: the error names the request (its id) like any other.
        const { response } = await this.#opened;
        throw new StreamError({ code: event.code, message: event.message, headers: response.headers });
      }
    }
    if (this.#final === undefined) throw new ConnectionError("The chat stream ended before its reply was complete");
    return text;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<ChatStreamEvent, void, undefined> {
    if (this.#started) throw new Error("A ChatStream can be read only once");
    this.#started = true;
    let body: Promise<OpenedStream> = this.#opened;
    // Reconnections since the last new event: only progress refills the budget, so a service that
    // replays what was already handled, or ends every stream early, cannot keep the stream looping.
    for (let failures = 0; ; ) {
      try {
        yield* this.#read(body, () => (failures = 0));
        return;
      } catch (error) {
        const generationId = this.#generationId;
        if (!(error instanceof ConnectionError) || !generationId || !this.#resume) throw error;
        if (failures >= MAX_RESUMES) {
          const headers = (await this.#opened.catch(() => undefined))?.response.headers;
          throw new StreamResumeError({ generationId, lastEventId: this.#lastEventId, resumes: failures, cause: error, headers });
        }
        const delay = retryDelayMs(failures++)!;
        await new Promise((resolve) => setTimeout(resolve, delay));
        if (this.#aborted) return;
        if (this.#userSignal?.aborted) throw this.#userSignal.reason;
        this.#resumes++;
        body = this.#resume(generationId, this.#lastEventId, this.#signal);
        body.catch(() => undefined);
      }
    }
  }

  /**
   * One connection's events; ConnectionError when it breaks (worth resuming once started).
   * `progressed` is called for each event with an id past the last one handled.
   */
  async *#read(opening: Promise<OpenedStream>, progressed: () => void): AsyncGenerator<ChatStreamEvent, void, undefined> {
    let body: ReadableStream<Uint8Array>;
    try {
      ({ body } = await opening);
    } catch (error) {
      if (this.#aborted) return;
      throw error;
    }
    const reader = body.getReader();
    const decoder = new TextDecoder();
    const queue: EventSourceMessage[] = [];
    // Comment lines (the keep-alive) reach no callback we register, so they are skipped.
    const parser = createParser({ onEvent: (message) => queue.push(message) });
    /** The last event id of this connection: within one connection ids only rise. */
    let connectionLastId: string | undefined;
    let idle: ReturnType<typeof setTimeout> | undefined;
    let timedOut = false;
    // The request's signal reaches fetch through intermediate Requests that undici links weakly,
    // so once they are garbage collected an abort may no longer close the body: cancel it here.
    const cancel = () => reader.cancel().catch(() => undefined);
    this.#signal.addEventListener("abort", cancel, { once: true });
    if (this.#signal.aborted) cancel();
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
          if (this.#userSignal?.aborted) throw this.#userSignal.reason;
          if (timedOut) throw new TimeoutError(`The chat stream sent nothing for ${this.#idleTimeout} ms`);
          parser.feed(decoder.decode());
        } else {
          parser.feed(decoder.decode(chunk.value, { stream: true }));
        }
        while (queue.length > 0) {
          const message = queue.shift()!;
          if (message.id !== undefined) {
            // Going back within one connection is a replay in a loop, not a resume: drop it.
            if (connectionLastId !== undefined && !isPast(message.id, connectionLastId)) {
              throw new ConnectionError(`The chat stream sent event ${message.id} again after ${connectionLastId}`);
            }
            connectionLastId = message.id;
            // Already handled (a resume that replays from too early): neither yielded nor progress.
            if (this.#lastEventId !== undefined && !isPast(message.id, this.#lastEventId)) continue;
            this.#lastEventId = message.id;
            progressed();
          }
          // An event without an id cannot be told from a repeat: it is passed on, but is no progress.
          const event = toWireEvent(message);
          if (!event) continue;
          if (event.type === "start") {
            this.#generationId = event.generation_id;
            continue;
          }
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
      this.#signal.removeEventListener("abort", cancel);
      reader.cancel().catch(() => undefined);
    }
  }
}

/** An SSE message as a typed event; undefined for unknown event names (from a newer service). */
function toWireEvent(message: EventSourceMessage): WireEvent | undefined {
  if (!message.event || !EVENT_TYPES.has(message.event)) return undefined;
  let data: unknown;
  try {
    data = JSON.parse(message.data);
  } catch {
    return undefined;
  }
  return { ...(data as object), type: message.event } as WireEvent;
}

/**
 * Whether event id `id` comes after `last`. The service's ids are decimal integers, compared by
 * value (BigInt: no precision limit); other ids cannot be ordered, so only a different one is new.
 */
function isPast(id: string, last: string): boolean {
  const decimal = /^\d+$/;
  if (decimal.test(id) && decimal.test(last)) return BigInt(id) > BigInt(last);
  return id !== last;
}
