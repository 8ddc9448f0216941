import type { TaskList } from "graphile-worker";
import type { Services } from "../services.ts";

/** Jobs of account deletion and data export. */
export function accountTasks(_services: Services): TaskList {
  return {};
}

/** Their recurring schedule (graphile-worker crontab lines). */
export const accountCrontab: string[] = [];
