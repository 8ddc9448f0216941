import type { Knex } from "knex";
import type { Database } from "../db/database.ts";
import type { Logger } from "../logger.ts";
import type { StatementPart } from "../db/statement-parts.ts";

// Resumable live events (issue 21: chat generations, issue 27: room events) as one pattern: an
// append-only log in PostgreSQL whose integer cursors are the streams' SSE ids (`Last-Event-ID`),
// one notification channel per log that says when to read the table again (a hint: a missed one
// costs latency, never events), replay from the table, deltas that are never stored and travel in the
// notification itself, purge past a retention window, and an end for every subscription when the
// process starts shutting down. The tables and their SQL stay in the owning area's store: the log is
// given them as a `LiveLogStore`.

/** An event as a subscriber receives it: a stored one carries its cursor as `id` (its SSE id). */
export interface LiveEvent {
  id?: string;
  type: string;
  data: unknown;
}

/** A stored event: its cursor, as a decimal string (bigint columns arrive so from the driver). */
export type StoredLiveEvent = LiveEvent & { id: string };

/** The owning area's SQL for one log. */
export interface LiveLogStore<E extends StoredLiveEvent = StoredLiveEvent> {
  /** The stored events of `stream` after `cursor`, up to `upTo` when given, at most `limit` when given, in order. */
  after(knex: Knex, stream: string, cursor: bigint, upTo: bigint | undefined, limit: number | undefined): Promise<E[]>;
  /** Drops what is past retention (stored before `before`, or of streams that ended before it); answers how many rows. */
  purge(knex: Knex, before: Date): Promise<number>;
}

/**
 * What a notification on a log's channel says. Payloads are `<stream>` or `<stream>:<cursor>`
 * (events up to that cursor were stored), `<stream>:delta:<json>` (an unstored delta) and
 * `<stream>:<name>` (a control, e.g. `closed`).
 */
export type LiveSignal =
  | { stream: string; kind: "stored"; upTo: bigint | undefined }
  | { stream: string; kind: "delta"; data: unknown }
  | { stream: string; kind: "control"; name: string };

const CONTROL = /^[a-z_]+$/;
const CURSOR = /^[0-9]+$/;

export function parseLiveSignal(payload: string): LiveSignal | undefined {
  const colon = payload.indexOf(":");
  if (colon < 0) return payload ? { stream: payload, kind: "stored", upTo: undefined } : undefined;
  const stream = payload.slice(0, colon);
  const rest = payload.slice(colon + 1);
  if (!stream || !rest) return undefined;
  if (rest.startsWith("delta:")) {
    try {
      return { stream, kind: "delta", data: JSON.parse(rest.slice("delta:".length)) as unknown };
    } catch {
      return undefined;
    }
  }
  if (CURSOR.test(rest)) return { stream, kind: "stored", upTo: BigInt(rest) };
  return CONTROL.test(rest) && rest !== "delta" ? { stream, kind: "control", name: rest } : undefined;
}

/** The payload of an unstored delta; the caller keeps it under `NOTIFY_PAYLOAD_BYTES`. */
export function deltaSignal(stream: string, data: unknown): string {
  return `${stream}:delta:${JSON.stringify(data)}`;
}

/**
 * PostgreSQL refuses a NOTIFY payload of 8000 bytes or more: a delta that could be larger is cut
 * into pieces below this by its publisher.
 */
export const NOTIFY_PAYLOAD_BYTES = 7_999;

/**
 * One open stream of a log's events, fanned out by the log: it is sent every stored event after
 * its cursor, in order, and every delta published meanwhile. `send` may answer a reason to end it
 * (the event says it may not hear more); the log then drops it and calls `end` with that reason.
 */
export interface LiveSubscriber {
  /** The cursor of the last stored event it has; the log advances it. */
  cursor: bigint;
  send(event: LiveEvent): string | undefined | void;
  /** Ended by the log: with a reason for good, without one (shutdown) it may reconnect. */
  end(reason?: string): void;
}

export interface LiveLogOptions<E extends StoredLiveEvent, S extends LiveSubscriber> {
  /** The notification channel (a fixed identifier). */
  channel: string;
  store: LiveLogStore<E>;
  /** How long stored events stay replayable at least: `purge()` drops what is older. */
  retentionMs: number;
  /** Controls that end every subscriber of their stream, with the reason each maps to. */
  endingControls?: Record<string, string>;
  /**
   * After the listening connection came back (notifications may have been lost): which subscribers
   * of `stream` must end, and why. A change that ends subscribers is announced by an event or a
   * control; this catches the ones that were lost.
   */
  verify?: (stream: string) => Promise<(subscriber: S) => string | undefined>;
  /** What the log's events are called in its log lines ("room events"). */
  describe: string;
}

export interface LiveLogDeps {
  db: Pick<Database, "knex" | "notifications">;
  log: Logger;
  /** Aborts when the process starts shutting down: every fanned-out subscription ends then. */
  stopping: AbortSignal;
}

/** Stored events read from the table per query while a fan-out catches up. */
const PAGE = 500;

/** A fan-out read waiting its turn: up to the newest cursor notified so far, or everything (`all`). */
interface PendingRead {
  upTo: bigint | "all";
}

interface StreamState<S> {
  subscribers: Set<S>;
  /** Single followers (`follower()`) of the stream in this process, woken by every stored signal. */
  wakers: Set<() => void>;
  /** The fan-out's work (reads, deltas, ends), one after another, so each subscriber's events stay in order. */
  tail: Promise<void>;
  /** The last queued task when it is a read that has not started: later notifications widen it. */
  pendingRead: PendingRead | undefined;
}

/**
 * A single reader of one stream from a cursor: `read()` answers the stored events after its cursor
 * and advances it; `wait()` resolves when events of the stream were announced since the last
 * `read()` began, after `pollMs` at the latest (a missed notification), or when `signal` aborts.
 */
export interface LiveFollower<E extends StoredLiveEvent> {
  cursor: bigint;
  read(): Promise<E[]>;
  wait(signal?: AbortSignal): Promise<void>;
  close(): void;
}

/** Batches appends to one stream: at most one write per `flushMs`, or at once past `flushWeight`. */
export interface LiveAppender<T> {
  /** Adds `event`, of weight `weight` (e.g. its characters), to the next batch. */
  queue(event: T, weight: number): void;
  /** Writes the pending batch now; resolves once every batch so far is written. */
  flush(): Promise<void>;
  /** Takes the pending events out of the batch (to be written with the stream's end) and waits for the batches before them. */
  take(): Promise<T[]>;
}

/**
 * One live-event log of this process: one listener on its channel, dispatching to single followers
 * and to fanned-out subscribers. For each stream with subscribers here, one read of the table per
 * burst of notifications (not one per subscriber) is handed to every subscriber whose cursor is
 * behind, so a replay is served from the same read. Nothing is kept in memory beyond the open
 * streams: the table is the truth, notifications only say when to look.
 */
export class LiveLog<E extends StoredLiveEvent = StoredLiveEvent, S extends LiveSubscriber = LiveSubscriber> {
  readonly #deps: LiveLogDeps;
  readonly #options: LiveLogOptions<E, S>;
  readonly #streams = new Map<string, StreamState<S>>();
  #listening: Promise<void> | undefined;

  constructor(deps: LiveLogDeps, options: LiveLogOptions<E, S>) {
    this.#deps = deps;
    this.#options = options;
    deps.stopping.addEventListener("abort", () => this.#endAll(), { once: true });
  }

  get channel(): string {
    return this.#options.channel;
  }

  /** Resolves once this process listens on the channel; a failure rejects, and the next call tries again. */
  ready(): Promise<void> {
    this.#listening ??= (async () => {
      const { notifications } = this.#deps.db;
      await notifications.listen(this.#options.channel, (payload) => this.#onSignal(parseLiveSignal(payload)));
      // Notifications sent while the connection was down are lost: every stream reads the table again.
      notifications.onReconnect(() => this.#caughtUp());
    })().catch((error: unknown) => {
      this.#listening = undefined;
      throw error;
    });
    return this.#listening;
  }

  // Writing

  /** Announces events of `stream` stored up to `upTo` (or stored, unsaid where): once `trx` commits, when given. */
  async announce(stream: string, upTo?: bigint | string, trx?: Knex | Knex.Transaction): Promise<void> {
    await this.#deps.db.notifications.notify(this.#options.channel, upTo === undefined ? stream : `${stream}:${upTo}`, trx);
  }

  /** The announcement of events of `stream` as part of the statement that stores them (statement-parts.ts). */
  announcement(stream: string): StatementPart {
    return this.#deps.db.notifications.inStatement(this.#options.channel, stream);
  }

  /** Publishes an unstored delta to the subscribers of `stream` everywhere (below `NOTIFY_PAYLOAD_BYTES` encoded). */
  async publish(stream: string, data: unknown): Promise<void> {
    await this.#deps.db.notifications.notify(this.#options.channel, deltaSignal(stream, data));
  }

  /** Sends control `name` to the subscribers of `stream` everywhere: once `trx` commits, when given. */
  async control(stream: string, name: string, trx?: Knex | Knex.Transaction): Promise<void> {
    if (!CONTROL.test(name) || name === "delta") throw new Error(`Invalid live-log control "${name}"`);
    await this.#deps.db.notifications.notify(this.#options.channel, `${stream}:${name}`, trx);
  }

  /**
   * A batched writer of one stream: `write` stores a batch (in order: one write at a time) with its
   * announcement, a part of the same statement (statement-parts.ts): one round trip a batch. A
   * failed write is logged and its events left to the stream's end.
   */
  appender<T>(
    stream: string,
    options: { write: (events: T[], announcement: StatementPart) => Promise<void>; flushMs: number; flushWeight: number; log: Logger; after?: Promise<unknown> },
  ): LiveAppender<T> {
    let pending: T[] = [];
    let weight = 0;
    let timer: NodeJS.Timeout | undefined;
    // `after`: what the first batch waits for (the row its events belong to).
    let writing: Promise<void> = (options.after ?? Promise.resolve()).then(() => {}, () => {});
    const flush = () => {
      clearTimeout(timer);
      timer = undefined;
      const batch = pending;
      pending = [];
      weight = 0;
      if (batch.length === 0) return writing;
      writing = writing.then(async () => {
        try {
          await options.write(batch, this.announcement(stream));
        } catch (error) {
          options.log.error({ err: error }, `could not store ${this.#options.describe}`);
        }
      });
      return writing;
    };
    return {
      queue(event, eventWeight) {
        pending.push(event);
        weight += eventWeight;
        if (weight >= options.flushWeight) void flush();
        else timer ??= setTimeout(() => void flush(), options.flushMs);
      },
      flush,
      async take() {
        clearTimeout(timer);
        timer = undefined;
        const rest = pending;
        pending = [];
        weight = 0;
        await writing;
        return rest;
      },
    };
  }

  /** Drops stored events past the retention window as of `now`; answers how many rows went. */
  async purge(now: Date): Promise<number> {
    return this.#options.store.purge(this.#deps.db.knex, new Date(now.getTime() - this.#options.retentionMs));
  }

  // Reading

  /** Calls `wake` whenever events of `stream` are announced as stored, by any process; answers the unsubscribe. */
  onStored(stream: string, wake: () => void): () => void {
    const state = this.#state(stream);
    state.wakers.add(wake);
    return () => {
      state.wakers.delete(wake);
      this.#release(stream, state);
    };
  }

  /** A single reader of `stream` after `cursor` (call after `ready()`, or it relies on polling alone). */
  follower(stream: string, cursor: bigint, pollMs: number): LiveFollower<E> {
    let wake: () => void = () => {};
    let next: Promise<void> = Promise.resolve();
    const stopWaking = this.onStored(stream, () => wake());
    const { store } = this.#options;
    const { knex } = this.#deps.db;
    const follower: LiveFollower<E> = {
      cursor,
      read: async () => {
        // Armed before the read: a notification during the read makes the next wait return at once.
        next = new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, pollMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        const events = await store.after(knex, stream, follower.cursor, undefined, undefined);
        if (events.length > 0) follower.cursor = BigInt(events[events.length - 1]!.id);
        return events;
      },
      wait: async (signal) => {
        if (!signal) return next;
        if (signal.aborted) return;
        let left = () => {};
        const leaving = new Promise<void>((resolve) => {
          left = resolve;
          signal.addEventListener("abort", left, { once: true });
        });
        try {
          await Promise.race([next, leaving]);
        } finally {
          signal.removeEventListener("abort", left);
        }
      },
      close: () => {
        stopWaking();
        wake();
      },
    };
    return follower;
  }

  /**
   * Registers `subscriber` and sends it every stored event after its cursor, then what follows;
   * answers the unsubscribe. Call after `ready()`.
   */
  subscribe(stream: string, subscriber: S): () => void {
    if (this.#deps.stopping.aborted) {
      subscriber.end();
      return () => {};
    }
    const state = this.#state(stream);
    state.subscribers.add(subscriber);
    // Whatever was stored between the caller choosing the cursor and now is read here.
    this.#queueRead(stream, state, "all");
    return () => this.#drop(stream, state, subscriber);
  }

  /** Fanned-out subscribers in this process, for tests and diagnostics. */
  get size(): number {
    let count = 0;
    for (const state of this.#streams.values()) count += state.subscribers.size;
    return count;
  }

  #state(stream: string): StreamState<S> {
    let state = this.#streams.get(stream);
    if (!state) {
      state = { subscribers: new Set(), wakers: new Set(), tail: Promise.resolve(), pendingRead: undefined };
      this.#streams.set(stream, state);
    }
    return state;
  }

  #release(stream: string, state: StreamState<S>): void {
    if (state.subscribers.size === 0 && state.wakers.size === 0 && this.#streams.get(stream) === state) this.#streams.delete(stream);
  }

  #onSignal(signal: LiveSignal | undefined): void {
    if (!signal) return;
    const state = this.#streams.get(signal.stream);
    if (!state) return;
    if (signal.kind === "stored") {
      for (const wake of state.wakers) wake();
      if (state.subscribers.size > 0) this.#queueRead(signal.stream, state, signal.upTo ?? "all");
    } else if (signal.kind === "delta") {
      const event: LiveEvent = { type: "delta", data: signal.data };
      this.#queue(state, async () => this.#broadcast(signal.stream, state, event));
    } else {
      const reason = this.#options.endingControls?.[signal.name];
      if (reason) this.#queue(state, async () => this.#endStream(signal.stream, state, reason));
    }
  }

  #caughtUp(): void {
    const { verify } = this.#options;
    for (const [stream, state] of this.#streams) {
      for (const wake of state.wakers) wake();
      if (state.subscribers.size === 0) continue;
      this.#queueRead(stream, state, "all");
      if (verify) {
        this.#queue(state, async () => {
          if (state.subscribers.size === 0) return;
          const reasonFor = await verify(stream);
          for (const subscriber of [...state.subscribers]) {
            const reason = reasonFor(subscriber);
            if (reason) this.#end(stream, state, subscriber, reason);
          }
        });
      }
    }
  }

  #queue(state: StreamState<S>, task: () => Promise<void>): void {
    state.pendingRead = undefined;
    state.tail = state.tail.then(task).catch((error: unknown) => this.#deps.log.error({ err: error }, `${this.#options.describe} could not be delivered`));
  }

  /**
   * Reads the table up to `upTo`. Notifications that arrive while the last queued task is a read
   * not yet started widen that read instead of adding one. A read stops at the newest event
   * notified before it was queued, so an event stored after a delta is not sent before the delta,
   * however long the read waits for the database.
   */
  #queueRead(stream: string, state: StreamState<S>, upTo: bigint | "all"): void {
    const pending = state.pendingRead;
    if (pending) {
      if (upTo === "all" || (pending.upTo !== "all" && upTo > pending.upTo)) pending.upTo = upTo;
      return;
    }
    const read: PendingRead = { upTo };
    this.#queue(state, async () => {
      // Started: a notification from now on queues the next read.
      if (state.pendingRead === read) state.pendingRead = undefined;
      await this.#read(stream, state, read.upTo);
    });
    state.pendingRead = read;
  }

  async #read(stream: string, state: StreamState<S>, upTo: bigint | "all"): Promise<void> {
    for (;;) {
      if (state.subscribers.size === 0) return;
      let from: bigint | undefined;
      for (const subscriber of state.subscribers) if (from === undefined || subscriber.cursor < from) from = subscriber.cursor;
      if (upTo !== "all" && from! >= upTo) return;
      const events = await this.#options.store.after(this.#deps.db.knex, stream, from!, upTo === "all" ? undefined : upTo, PAGE);
      for (const event of events) this.#deliver(stream, state, event);
      if (events.length < PAGE) return;
    }
  }

  #deliver(stream: string, state: StreamState<S>, event: E): void {
    const cursor = BigInt(event.id);
    // One object for every subscriber: a transport may serialize it once.
    for (const subscriber of [...state.subscribers]) {
      if (subscriber.cursor >= cursor) continue;
      subscriber.cursor = cursor;
      const reason = subscriber.send(event);
      if (reason) this.#end(stream, state, subscriber, reason);
    }
  }

  #broadcast(stream: string, state: StreamState<S>, event: LiveEvent): void {
    for (const subscriber of [...state.subscribers]) {
      const reason = subscriber.send(event);
      if (reason) this.#end(stream, state, subscriber, reason);
    }
  }

  async #endStream(stream: string, state: StreamState<S>, reason: string): Promise<void> {
    for (const subscriber of [...state.subscribers]) this.#end(stream, state, subscriber, reason);
  }

  #end(stream: string, state: StreamState<S>, subscriber: S, reason?: string): void {
    this.#drop(stream, state, subscriber);
    subscriber.end(reason);
  }

  #drop(stream: string, state: StreamState<S>, subscriber: S): void {
    state.subscribers.delete(subscriber);
    this.#release(stream, state);
  }

  /** Shutting down: every fanned-out stream ends, and its client reconnects (to another process) from its last id. */
  #endAll(): void {
    for (const [stream, state] of this.#streams) for (const subscriber of [...state.subscribers]) this.#end(stream, state, subscriber);
  }
}
