import type { Task } from "graphile-worker";
import type { Services } from "../../toolkit/services.ts";

export const ROOM_EVENTS_PURGE_TASK = "room_events_purge";
// Hourly: an event lives between 24 and 25 hours, longer than the replay window promises.
export const roomEventsCrontab = [`15 * * * * ${ROOM_EVENTS_PURGE_TASK}`];

/** Removes stored room events older than the replay window. */
export async function purgeOldRoomEvents(services: Services): Promise<number> {
  return services.areas.roomHub.purge(services.now());
}

export function roomEventTasks(services: Services): Record<string, Task> {
  return {
    [ROOM_EVENTS_PURGE_TASK]: async () => {
      const removed = await purgeOldRoomEvents(services);
      if (removed) services.log.info({ removed }, "room events past the replay window purged");
    },
  };
}
