import { LiveLog, type LiveEvent, type LiveLogDeps, type LiveSubscriber } from "../../toolkit/events/live-log.ts";
import type { Services } from "../../toolkit/services.ts";
import { ROOM_EVENTS_CHANNEL, ROOM_EVENTS_REPLAY_MS } from "./events.ts";
import { memberIdsOf, purgeRoomEvents, roomEventsAfter } from "./store.ts";

/** An event as a subscriber receives it: stored ones carry their id; `hidden` ones are passed by (store.ts `RoomEventRow`). */
export type HubEvent = LiveEvent & { hidden?: boolean };

/** Why the hub ends a subscription for good; a subscription ended without one may be reopened. */
export type EndReason = "removed" | "room_deleted";

/** One open stream of a room's events (an SSE response, as far as the hub knows nothing of HTTP). */
export interface Subscriber extends LiveSubscriber {
  userId: string;
  end(reason?: EndReason): void;
}

/**
 * The process's one dispatcher of room events: the toolkit's live-event log on `room_events`, with
 * a stream per room. One listener on the channel, and for each room with subscribers here, one read
 * of the table per burst of notifications (not one per subscriber), handed to every subscriber
 * whose cursor is behind; deltas travel in the notifications; a deleted room's `closed` ends its
 * streams, and so does shutdown.
 */
export type RoomHub = LiveLog<HubEvent & { id: string }, Subscriber>;

declare module "../../toolkit/services.ts" {
  interface AreaRegistries {
    /** The room events of this process's open room streams (issue 27). */
    roomHub: RoomHub;
  }
}

/** The room hub of a process: created once, in runtime.ts. */
export function createRoomHub(deps: LiveLogDeps): RoomHub {
  return new LiveLog(deps, {
    channel: ROOM_EVENTS_CHANNEL,
    store: {
      after: (knex, roomId, cursor, upTo, limit) => roomEventsAfter(knex, roomId, cursor.toString(), upTo?.toString(), limit ?? Number.MAX_SAFE_INTEGER),
      purge: purgeRoomEvents,
    },
    retentionMs: ROOM_EVENTS_REPLAY_MS,
    endingControls: { closed: "room_deleted" satisfies EndReason },
    // After a lost connection: a member removed, or a room deleted, meanwhile is not told by an event it could miss.
    verify: async (roomId) => {
      const members = await memberIdsOf(deps.db.knex, roomId);
      return (subscriber) => (!members ? "room_deleted" : members.has(subscriber.userId) ? undefined : "removed");
    },
    describe: "room events",
  });
}

/** The hub of this process (of this set of services: tests run several in one process). */
export function roomHub(services: Services): RoomHub {
  return services.areas.roomHub;
}

/** A member taken out of the room hears of it, then its stream ends. */
export function endsStreamOf(event: HubEvent, userId: string): EndReason | undefined {
  return event.type === "member_left" && (event.data as { user_id?: unknown }).user_id === userId ? "removed" : undefined;
}
