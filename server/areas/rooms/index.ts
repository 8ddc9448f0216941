// The group rooms area's public surface: rooms, their members and personas, and live room events.
import { defineArea } from "../../toolkit/area.ts";
import { roomAccountData } from "./account-data.ts";
import { handlers } from "./handlers.ts";
import { roomEventsCrontab, roomEventTasks } from "./jobs.ts";

export const area = defineArea({ name: "rooms", handlers, tasks: roomEventTasks, crontab: roomEventsCrontab, accountData: roomAccountData, tables: ["rooms", "room_members", "room_personas", "room_messages", "room_events"], repliesStoredIn: ["room_messages"] });
export { createRoomHub } from "./hub.ts";
// What the safety area reads and changes (issue 41).
export { findRoomMessageForModeration, setRoomMessageTakedown, visibleRoomMessage } from "./service.ts";
// What the sums of reply costs read beside conversation replies (issue 40).
export { ROOM_PRICED_REPLIES_SQL } from "./costs.ts";
