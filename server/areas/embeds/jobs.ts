import type { TaskList } from "graphile-worker";
import type { Services } from "../../toolkit/services.ts";
import { forgetIdleGuests } from "./guests.ts";
import { utcDay } from "./limits.ts";
import { deleteDailyUsageBefore } from "./store.ts";

const SWEEP_TASK = "embed_visitors_sweep";

/** Once a day: visitors unseen for 90 days are forgotten, and the daily counts of past days dropped. */
export const embedCrontab = [`17 3 * * * ${SWEEP_TASK}`];

export function embedTasks(services: Services): TaskList {
  return {
    [SWEEP_TASK]: async () => {
      const forgotten = await forgetIdleGuests(services);
      // Yesterday's count stays a day, for an owner reading it just after midnight UTC.
      await deleteDailyUsageBefore(services.db.knex, utcDay(new Date(services.now().getTime() - 24 * 60 * 60 * 1000)));
      if (forgotten > 0) services.log.info({ forgotten }, "embed visitors unseen for 90 days forgotten");
    },
  };
}
