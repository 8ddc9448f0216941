// Operations: health, readiness, the API reference, and the house's own housekeeping jobs.
import { defineArea } from "../../toolkit/area.ts";
import { handlers } from "./handlers.ts";
import { housekeepingCrontab, housekeepingTasks } from "./housekeeping.ts";

export const area = defineArea({ name: "ops", handlers, tasks: housekeepingTasks, crontab: housekeepingCrontab });
