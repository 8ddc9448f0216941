import { createParser, type EventSourceMessage } from "eventsource-parser";
import { ConnectionError, PersonaError, TimeoutError } from "./errors.ts";
import { responseMeta, type ResponseMeta } from "./response-meta.ts";
import { isRetryableStatus, retryDelayMs } from "./retry.ts";
import type { OpenedStream } from "./stream.ts";
import { anySignal, sleep } from "./signal.ts";
import type { RequestOptions, Schemas } from "./types.ts";

/**
 * The events of a room's stream, typed from the contract. Stored events carry the `id` the stream
 * resumes after; `delta` (a persona's reply being written) and `closed` carry none.
 */
export type RoomEvent =
  | { type: "message"; id: string; data: Schemas["RoomMessage"] }
  | { type: "delta"; data: Schemas["RoomEventDelta"] }
  | { type: "member_joined"; id: string; data: Schemas["RoomMember"] }
  | { type: "member_left"; id: string; data: Schemas["RoomEventMemberLeft"] }
  | { type: "persona_added"; id: string; data: Schemas["RoomPersona"] }
  | { type: "persona_removed"; id: string; data: Schemas["RoomEventPersonaRemoved"] }
  | { type: "closed"; data: Schemas["RoomEventClosed"] };

const STORED = new Set(["message", "member_joined", "member_left", "persona_added", "persona_removed"]);
const EPHEMERAL = new Set(["delta", "closed"]);

/** Opens the stream once, resuming after `lastEventId`; rejects with the typed error of a refusal. */
export type OpenRoomEvents = (lastEventId: string | undefined, signal: AbortSignal) => Promise<OpenedStream>;

export interface RoomEventsOptions extends RequestOptions {
  /** Resume after this event id (one a previous stream gave, kept e.g. across restarts). */
  lastEventId?: string;
  /** Ends the iteration (quietly) and closes the connection. */
  signal?: AbortSignal;
  /** Consecutive failed reconnects before the error is thrown; unlimited by default, like EventSource. */
  maxReconnects?: number;
  /**
   * Called each time the stream is (re)opened, once the service has answered: every event stored
   * from then on will arrive, so e.g. history read after the first call cannot leave a gap. It gets
   * that answer's Response, request id and rate-limit state (what `.withResponse()` gives elsewhere).
   */
  onOpen?: (opened: ResponseMeta) => void;
}

/**
 * A room's live events. Iterating it opens the stream and keeps it open: when the connection
 * breaks, the service restarts or nothing (not even a keep-alive) arrives within the client's
 * timeout, it reconnects with backoff and `Last-Event-ID`, so stored events are never lost or
 * repeated (deltas sent while disconnected are; the finished `message` follows them anyway).
 * Iteration ends after a `closed` event (removed from the room, or the room deleted), when `signal`
 * aborts or `close()` is called; it throws on a refusal that reconnecting cannot cure (NotFoundError,
 * PermissionDeniedError, AuthenticationError, ...), or after `maxReconnects` failures in a row.
 *
 * @example
 * const events = client.rooms.events(room.id);
 * for await (const event of events) {
 *   if (event.type === "message") console.log(`${event.data.sender.name}: ${event.data.content}`);
 *   if (event.type === "delta") process.stdout.write(event.data.content);
 * }
 * // later, to resume where it stopped: client.rooms.events(room.id, { lastEventId: events.lastEventId })
 */
export class RoomEventStream implements AsyncIterable<RoomEvent> {
  readonly #open: OpenRoomEvents;
  readonly #controller = new AbortController();
  readonly #signal: AbortSignal;
  readonly #idleTimeout: number;
  readonly #maxReconnects: number;
  readonly #onOpen: ((opened: ResponseMeta) => void) | undefined;
  #lastEventId: string | undefined;
  #reconnects = 0;
  #received = 0;
  #started = false;

  constructor(open: OpenRoomEvents, options: RoomEventsOptions & { idleTimeout: number }) {
    this.#open = open;
    this.#idleTimeout = options.idleTimeout;
    this.#maxReconnects = options.maxReconnects ?? Number.POSITIVE_INFINITY;
    this.#lastEventId = options.lastEventId;
    this.#onOpen = options.onOpen;
    this.#signal = anySignal([options.signal, this.#controller.signal]);
  }

  /** The id of the last stored event received: where a new stream would resume. */
  get lastEventId(): string | undefined {
    return this.#lastEventId;
  }

  /** How many times the stream was reopened after it broke. */
  get reconnects(): number {
    return this.#reconnects;
  }

  /** Ends the iteration and closes the connection. */
  close(): void {
    this.#controller.abort(new DOMException("The room event stream was closed", "AbortError"));
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<RoomEvent, void, undefined> {
    if (this.#started) throw new Error("A RoomEventStream can be read only once");
    this.#started = true;
    // Failed opens, and connections that ended without a single event, in a row: they set the backoff.
    let failures = 0;
    for (;;) {
      if (this.#signal.aborted) return;
      let opened: OpenedStream;
      try {
        opened = await this.#open(this.#lastEventId, this.#signal);
      } catch (error) {
        if (this.#signal.aborted) return;
        const delay = this.#retryDelay(error, failures++);
        if (delay === undefined) throw error;
        if (!(await this.#wait(delay))) return;
        this.#reconnects++;
        continue;
      }
      this.#onOpen?.(responseMeta(opened.response));
      const received = this.#received;
      if ((yield* this.#read(opened.body)) === "closed" || this.#signal.aborted) return;
      // The service ended the stream (a restart, a slow reader) or it broke. One that was working is
      // reopened at once; one that ends again and again without an event, with backoff.
      if (this.#received > received) failures = 0;
      else if (!(await this.#wait(retryDelayMs(failures++)!))) return;
      this.#reconnects++;
    }
  }

  /** Reads one connection until it ends; `closed` when the service said not to come back. */
  async *#read(body: ReadableStream<Uint8Array>): AsyncGenerator<RoomEvent, "closed" | "broken", undefined> {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    const queue: RoomEvent[] = [];
    const parser = createParser({ onEvent: (message) => pushEvent(queue, message) });
    let idle: ReturnType<typeof setTimeout> | undefined;
    // The signal reaches fetch through Requests that undici links weakly; once those are garbage
    // collected, close() might not end the body: cancel it here (see ChatStream).
    const cancel = () => reader.cancel().catch(() => undefined);
    this.#signal.addEventListener("abort", cancel, { once: true });
    if (this.#signal.aborted) cancel();
    try {
      for (;;) {
        idle = setTimeout(() => reader.cancel(new TimeoutError(`The room event stream sent nothing for ${this.#idleTimeout} ms`)).catch(() => undefined), this.#idleTimeout);
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch {
          return "broken";
        } finally {
          clearTimeout(idle);
        }
        if (chunk.done) return "broken";
        parser.feed(decoder.decode(chunk.value, { stream: true }));
        while (queue.length > 0) {
          const event = queue.shift()!;
          if ("id" in event) this.#lastEventId = event.id;
          this.#received++;
          yield event;
          if (event.type === "closed") return "closed";
        }
      }
    } finally {
      clearTimeout(idle);
      this.#signal.removeEventListener("abort", cancel);
      reader.cancel().catch(() => undefined);
    }
  }

  /** The wait before reconnecting after `error`, or undefined when reconnecting cannot help. */
  #retryDelay(error: unknown, failures: number): number | undefined {
    if (failures >= this.#maxReconnects) return undefined;
    if (error instanceof ConnectionError || error instanceof TimeoutError) return retryDelayMs(failures);
    if (error instanceof PersonaError && error.status !== undefined && isRetryableStatus(error.status)) return retryDelayMs(failures, error.headers);
    return undefined;
  }

  /** Sleeps; false when the stream was closed meanwhile. */
  async #wait(ms: number): Promise<boolean> {
    try {
      await sleep(ms, this.#signal);
      return true;
    } catch {
      return false;
    }
  }
}

/** Turns an SSE message into a typed event; unknown event names (from a newer service) are skipped. */
function pushEvent(queue: RoomEvent[], message: EventSourceMessage): void {
  if (!message.event || (!STORED.has(message.event) && !EPHEMERAL.has(message.event))) return;
  let data: unknown;
  try {
    data = JSON.parse(message.data);
  } catch {
    return;
  }
  const stored = STORED.has(message.event) && message.id !== undefined;
  if (STORED.has(message.event) && !stored) return;
  queue.push((stored ? { type: message.event, id: message.id, data } : { type: message.event, data }) as RoomEvent);
}
