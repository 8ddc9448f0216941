import type { Services } from "../../toolkit/services.ts";
import { parseSignal, ROOM_EVENTS_CHANNEL, type RoomSignal } from "./events.ts";
import { memberIdsOf, roomEventsAfter, type RoomEventRow } from "./store.ts";

/** An event as a subscriber receives it: stored ones carry their id. */
export interface HubEvent {
  id?: string;
  type: string;
  data: unknown;
}

/** Why the hub ends a subscription for good; a subscription ended without one may be reopened. */
export type EndReason = "removed" | "room_deleted";

/** One open stream of a room's events (an SSE response, as far as the hub knows nothing of HTTP). */
export interface Subscriber {
  userId: string;
  /** The id of the last stored event it has; the hub sends it every later one, in order. */
  cursor: bigint;
  send(event: HubEvent): void;
  end(reason?: EndReason): void;
}

/** Events read from the table per query while catching up. */
const PAGE = 500;

/** A read of the table waiting its turn: up to the newest event notified so far, or everything (`all`). */
interface PendingRead {
  upTo: bigint | "all";
}

interface RoomState {
  subscribers: Set<Subscriber>;
  /** The room's work (reads, deltas, closes), one after another, so each subscriber's events stay in order. */
  tail: Promise<void>;
  /** The last queued task when it is a read that has not started: later notifications widen it. */
  pendingRead: PendingRead | undefined;
}

/**
 * The process's one dispatcher of room events: a single listener on the notification channel, and
 * for each room with subscribers here, one read of the table per burst of notifications (not one
 * per subscriber), handed to every subscriber whose cursor is behind. A subscriber that is behind
 * (a replay) is served from the same read. Nothing is kept in memory beyond the open streams: the
 * table is the truth, notifications only say when to look.
 */
export class RoomHub {
  readonly #services: Services;
  readonly #rooms = new Map<string, RoomState>();
  #listening: Promise<void> | undefined;

  constructor(services: Services) {
    this.#services = services;
    services.stopping.addEventListener("abort", () => this.#endAll(), { once: true });
  }

  /** Resolves once this process listens for room events (a failure here can still be answered as JSON). */
  ready(): Promise<void> {
    return this.#listen();
  }

  /**
   * Registers `subscriber` and sends it every stored event after its cursor, then what follows;
   * answers the unsubscribe. Call after `ready()`.
   */
  subscribe(roomId: string, subscriber: Subscriber): () => void {
    if (this.#services.stopping.aborted) {
      subscriber.end();
      return () => {};
    }
    let state = this.#rooms.get(roomId);
    if (!state) {
      state = { subscribers: new Set(), tail: Promise.resolve(), pendingRead: undefined };
      this.#rooms.set(roomId, state);
    }
    state.subscribers.add(subscriber);
    // Whatever was stored between the caller choosing the cursor and now is read here.
    this.#queueRead(roomId, state, "all");
    const room = state;
    return () => this.#drop(roomId, room, subscriber);
  }

  /** Subscribers in this process, for tests and diagnostics. */
  get size(): number {
    let count = 0;
    for (const state of this.#rooms.values()) count += state.subscribers.size;
    return count;
  }

  #listen(): Promise<void> {
    this.#listening ??= (async () => {
      const { notifications } = this.#services.db;
      await notifications.listen(ROOM_EVENTS_CHANNEL, (payload) => this.#onSignal(parseSignal(payload)));
      // Notifications sent while the connection was down are lost: every room reads the table again.
      notifications.onReconnect(() => {
        for (const [roomId, state] of this.#rooms) {
          this.#queueRead(roomId, state, "all");
          this.#queue(state, () => this.#checkMembers(roomId, state));
        }
      });
    })().catch((error: unknown) => {
      this.#listening = undefined;
      throw error;
    });
    return this.#listening;
  }

  #onSignal(signal: RoomSignal | undefined): void {
    if (!signal) return;
    const state = this.#rooms.get(signal.roomId);
    if (!state) return;
    if (signal.kind === "event") this.#queueRead(signal.roomId, state, BigInt(signal.eventId));
    else if (signal.kind === "delta") this.#queue(state, async () => this.#broadcast(state, { type: "delta", data: signal.delta }));
    else this.#queue(state, async () => this.#endRoom(signal.roomId, state, "room_deleted"));
  }

  #queue(state: RoomState, task: () => Promise<void>): void {
    state.pendingRead = undefined;
    state.tail = state.tail.then(task).catch((error: unknown) => this.#services.log.error({ err: error }, "room events could not be delivered"));
  }

  /**
   * Reads the table up to `upTo`. Notifications that arrive while the last queued task is a read
   * not yet started widen that read instead of adding one. A read stops at the newest event
   * notified before it was queued, so an event stored after a delta is not sent before the delta,
   * however long the read waits for the database.
   */
  #queueRead(roomId: string, state: RoomState, upTo: bigint | "all"): void {
    const pending = state.pendingRead;
    if (pending) {
      if (upTo === "all" || (pending.upTo !== "all" && upTo > pending.upTo)) pending.upTo = upTo;
      return;
    }
    const read: PendingRead = { upTo };
    this.#queue(state, async () => {
      // Started: a notification from now on queues the next read.
      if (state.pendingRead === read) state.pendingRead = undefined;
      await this.#read(roomId, state, read.upTo);
    });
    state.pendingRead = read;
  }

  async #read(roomId: string, state: RoomState, upTo: bigint | "all"): Promise<void> {
    for (;;) {
      if (state.subscribers.size === 0) return;
      let from: bigint | undefined;
      for (const subscriber of state.subscribers) if (from === undefined || subscriber.cursor < from) from = subscriber.cursor;
      if (upTo !== "all" && from! >= upTo) return;
      const rows = await roomEventsAfter(this.#services.db.knex, roomId, from!.toString(), upTo === "all" ? undefined : upTo.toString(), PAGE);
      for (const row of rows) this.#deliver(roomId, state, row);
      if (rows.length < PAGE) return;
    }
  }

  #deliver(roomId: string, state: RoomState, row: RoomEventRow): void {
    const id = BigInt(row.id);
    // One object for every subscriber: the transport serializes it once.
    const event: HubEvent = { id: row.id, type: row.type, data: row.data };
    for (const subscriber of [...state.subscribers]) {
      if (subscriber.cursor >= id) continue;
      subscriber.cursor = id;
      subscriber.send(event);
      // A member taken out of the room hears of it, then its stream ends.
      if (row.type === "member_left" && row.data.user_id === subscriber.userId) this.#end(roomId, state, subscriber, "removed");
    }
  }

  #broadcast(state: RoomState, event: HubEvent): void {
    for (const subscriber of state.subscribers) subscriber.send(event);
  }

  /** After a lost connection: a member removed, or a room deleted, meanwhile is not told by an event it could miss. */
  async #checkMembers(roomId: string, state: RoomState): Promise<void> {
    if (state.subscribers.size === 0) return;
    const members = await memberIdsOf(this.#services.db.knex, roomId);
    if (!members) return this.#endRoom(roomId, state, "room_deleted");
    for (const subscriber of [...state.subscribers]) if (!members.has(subscriber.userId)) this.#end(roomId, state, subscriber, "removed");
  }

  async #endRoom(roomId: string, state: RoomState, reason: EndReason): Promise<void> {
    for (const subscriber of [...state.subscribers]) this.#end(roomId, state, subscriber, reason);
  }

  #end(roomId: string, state: RoomState, subscriber: Subscriber, reason?: EndReason): void {
    this.#drop(roomId, state, subscriber);
    subscriber.end(reason);
  }

  #drop(roomId: string, state: RoomState, subscriber: Subscriber): void {
    state.subscribers.delete(subscriber);
    if (state.subscribers.size === 0 && this.#rooms.get(roomId) === state) this.#rooms.delete(roomId);
  }

  /** Shutting down: every stream ends, and its client reconnects (to another process) from its last id. */
  #endAll(): void {
    for (const [roomId, state] of this.#rooms) for (const subscriber of [...state.subscribers]) this.#end(roomId, state, subscriber);
  }
}

const hubs = new WeakMap<Services, RoomHub>();

/** The hub of this process (of this set of services: tests run several in one process). */
export function roomHub(services: Services): RoomHub {
  let hub = hubs.get(services);
  if (!hub) {
    hub = new RoomHub(services);
    hubs.set(services, hub);
  }
  return hub;
}
