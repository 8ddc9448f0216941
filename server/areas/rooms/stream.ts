import type { Response } from "express";
import { SSEWriter, sseFrame } from "../../toolkit/http/sse.ts";
import type { Services } from "../../toolkit/services.ts";
import { endsStreamOf, type EndReason, type HubEvent, type Subscriber } from "./hub.ts";

/**
 * Output a reader has not taken yet beyond which its stream is closed rather than buffered without
 * bound; the client reconnects with `Last-Event-ID` and reads the rest from the table.
 */
const MAX_UNREAD_BYTES = 1024 * 1024;

// The hub hands the same event object to every subscriber of a room: it is serialized once.
const frames = new WeakMap<HubEvent, string>();
function frameOf(event: HubEvent): string {
  let frame = frames.get(event);
  if (frame === undefined) {
    frame = sseFrame(event.type, event.data, event.id);
    frames.set(event, frame);
  }
  return frame;
}

/**
 * Carries a room's events to one member over server-sent events until the client leaves, the
 * member is removed, the room is deleted, the reader falls too far behind or the process stops.
 * Resolves when the stream has ended.
 */
export async function streamRoomEvents(services: Services, res: Response, options: { roomId: string; userId: string; cursor: string }): Promise<void> {
  const hub = services.areas.roomHub;
  await hub.ready();
  const sse = new SSEWriter(res, { keepAliveMs: services.config.streamKeepAliveMs });
  const ended = new Promise<void>((resolve) => res.once("close", resolve));
  // The hub drops a subscriber itself before ending it; the client leaving is unsubscribed below.
  const end = (reason?: EndReason) => {
    if (reason) sse.event("closed", { reason });
    sse.close();
  };
  const subscriber: Subscriber = {
    userId: options.userId,
    cursor: BigInt(options.cursor),
    send(event: HubEvent) {
      // A message hidden since it was posted: its id is passed, nothing is sent.
      if (!sse.open || event.hidden) return undefined;
      sse.frame(frameOf(event));
      if (res.writableLength > MAX_UNREAD_BYTES) {
        services.log.info({ roomId: options.roomId, buffered: res.writableLength }, "a room event reader fell behind; its stream is closed");
        end();
        unsubscribe();
        return undefined;
      }
      return endsStreamOf(event, options.userId);
    },
    end,
  };
  const unsubscribe = hub.subscribe(options.roomId, subscriber);
  await ended;
  unsubscribe();
}
