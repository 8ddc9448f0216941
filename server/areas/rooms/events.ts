import type { Knex } from "knex";
import type { components } from "../../../generated/openapi.d.ts";
import { deltaSignal, NOTIFY_PAYLOAD_BYTES } from "../../toolkit/events/live-log.ts";
import type { Services } from "../../toolkit/services.ts";
import { insertRoomEvents, type NewRoomEvent } from "./store.ts";

// The writing side of live room events, on the room hub's live-event log (hub.ts). Stored events are
// rows of `room_events`, written in the transaction of the change they describe; every process hears
// of them by one notification on ROOM_EVENTS_CHANNEL and reads their bodies from the table. Deltas
// are not stored: their text travels in the notification itself.

type Schemas = components["schemas"];
export type RoomEventDelta = Schemas["RoomEventDelta"];

export const ROOM_EVENTS_CHANNEL = "room_events";

/** How long stored events are kept for `Last-Event-ID` replay. */
export const ROOM_EVENTS_REPLAY_MS = 24 * 60 * 60 * 1000;

/**
 * Stores `events` of the room and announces them once the transaction commits. The caller has
 * locked the room's row in `trx` (so ids commit in order within the room).
 */
export async function recordRoomEvents(services: Services, trx: Knex.Transaction, roomId: string, events: NewRoomEvent[]): Promise<void> {
  if (events.length === 0) return;
  const lastId = await insertRoomEvents(trx, roomId, events, services.now());
  await services.areas.roomHub.announce(roomId, lastId, trx);
}

/** Announces events of the room up to `lastId`, stored (and committed) already. */
export async function announceRoomEvents(services: Services, roomId: string, lastId: string): Promise<void> {
  await services.areas.roomHub.announce(roomId, lastId).catch((error: unknown) => {
    // Stored is stored: subscribers read it with the room's next event, or when they reconnect.
    services.log.warn({ err: error, roomId }, "room events could not be announced");
  });
}

/** Tells every subscriber of the room, once `trx` commits, that the room is gone. */
export async function announceRoomDeleted(services: Services, trx: Knex.Transaction, roomId: string): Promise<void> {
  await services.areas.roomHub.control(roomId, "closed", trx);
}

/** The notification payloads that carry `delta`, each under PostgreSQL's size limit. */
export function deltaPayloads(roomId: string, delta: RoomEventDelta): string[] {
  return deltaPieces(roomId, delta).map((piece) => deltaSignal(roomId, piece));
}

/**
 * `delta` cut into deltas whose notifications fit under PostgreSQL's limit (fragments concatenate,
 * so nothing changes for the client); the rest of the payload is a room id, persona id and name,
 * and a message id.
 */
function deltaPieces(roomId: string, delta: RoomEventDelta): RoomEventDelta[] {
  const pieces: RoomEventDelta[] = [];
  const encode = (content: string) => deltaSignal(roomId, { ...delta, content });
  const overhead = Buffer.byteLength(encode(""));
  let piece = "";
  let pieceBytes = 0;
  for (const char of delta.content) {
    // JSON escaping can grow a character to 6 bytes (\uXXXX); count the worst case.
    const bytes = Math.max(Buffer.byteLength(JSON.stringify(char)) - 2, Buffer.byteLength(char));
    if (piece && overhead + pieceBytes + bytes > NOTIFY_PAYLOAD_BYTES) {
      pieces.push({ ...delta, content: piece });
      piece = "";
      pieceBytes = 0;
    }
    piece += char;
    pieceBytes += bytes;
  }
  if (piece || pieces.length === 0) pieces.push({ ...delta, content: piece });
  return pieces;
}

/**
 * Deltas of one reply go out at most this often: a model streaming a token at a time would
 * otherwise cost a notification, a read of it in every process and a write to every subscriber
 * per token. Twenty updates a second still read as live text.
 */
export const DELTA_INTERVAL_MS = 50;

/**
 * Relays the deltas of one persona reply in order, without making the reply wait for them: the
 * first fragment goes out at once, then what arrives meanwhile is sent together, at most every
 * DELTA_INTERVAL_MS. `flush()` sends what is left at once and resolves when everything handed in
 * was sent, so the stored reply's `message` event cannot overtake its last delta.
 */
export function deltaRelay(services: Services, roomId: string, base: Omit<RoomEventDelta, "content">): { push: (content: string) => void; flush: () => Promise<void> } {
  let pending = "";
  let sending: Promise<void> | undefined;
  let flushing = false;
  let wake: (() => void) | undefined;
  const pause = () =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, DELTA_INTERVAL_MS);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  const send = async () => {
    while (pending) {
      const content = pending;
      pending = "";
      for (const piece of deltaPieces(roomId, { ...base, content })) {
        await services.areas.roomHub.publish(roomId, piece).catch((error: unknown) => {
          // A lost delta costs a client the live preview only; the stored message follows.
          services.log.warn({ err: error, roomId }, "a room delta could not be relayed");
        });
      }
      if (!flushing) await pause();
      wake = undefined;
    }
    sending = undefined;
  };
  return {
    push(content) {
      if (!content) return;
      pending += content;
      sending ??= send();
    },
    async flush() {
      flushing = true;
      wake?.();
      await sending;
    },
  };
}
