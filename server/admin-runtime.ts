import { processRegistries } from "./runtime.ts";
import type { Config } from "./toolkit/config.ts";
import { openDatabase, type Database } from "./toolkit/db/database.ts";
import { instanceSecret } from "./toolkit/db/instance-secrets.ts";
import type { Notifications } from "./toolkit/db/notifications.ts";
import { openJobQueue, type JobQueue } from "./toolkit/jobs/queue.ts";
import type { Logger } from "./toolkit/logger.ts";
import { createProviders } from "./toolkit/providers/index.ts";
import type { Services } from "./toolkit/services.ts";
import { TokenSigner } from "./toolkit/tokens.ts";

/** Services for one operator command, and the way to let them go. */
export interface AdminServices extends Services {
  close: () => Promise<void>;
}

/**
 * The areas' services for an operator command (`persona users`, `oauth-clients`, `mail`,
 * `marketplace feature`): the service's database, providers and secrets, configured as the server
 * is, without a listener, a worker or migrations. The command calls the areas' functions, so their
 * rules (validation, revocation announcements) hold as they do for a request.
 */
export async function openServices(config: Config, log: Logger): Promise<AdminServices> {
  const db = await openDatabase(config, log);
  const stopping = new AbortController();
  const jobs = lazyJobQueue(db, log);
  const quiet: Database = { ...db, notifications: sendOnly(db.notifications) };
  try {
    const services: Services = {
      config,
      db: quiet,
      log,
      jobs,
      tokens: new TokenSigner(await instanceSecret(db.knex, "jwt", config.jwtSecret)),
      providers: await createProviders(config, db.knex, log),
      now: () => new Date(),
      health: { worker: "disabled" },
      stopping: stopping.signal,
      // The same registries as a server's, so that any area function may run here; each is lazy.
      ...processRegistries({ db: quiet, log, stopping: stopping.signal }),
    };
    return {
      ...services,
      close: async () => {
        stopping.abort();
        await jobs.release();
        await db.close();
      },
    };
  } catch (error) {
    await db.close();
    throw error;
  }
}

/**
 * A command sends notifications (a revocation reaches the servers' credential caches) but keeps no
 * cache of its own to keep fresh: listening would hold a connection open for nothing.
 */
function sendOnly(notifications: Notifications): Notifications {
  return {
    listen: async () => async () => {},
    notify: (channel, payload, trx) => notifications.notify(channel, payload, trx),
    inStatement: (channel, payload) => notifications.inStatement(channel, payload),
    onReconnect: () => () => {},
    close: () => notifications.close(),
  };
}

/** The job queue, opened by the first job a command adds: most add none, and opening it migrates graphile-worker's schema. */
function lazyJobQueue(db: Database, log: Logger): JobQueue {
  let queue: Promise<JobQueue> | undefined;
  return {
    add: async (task, payload, options) => (await (queue ??= openJobQueue(db, log))).add(task, payload, options),
    release: async () => {
      await (await queue?.catch(() => undefined))?.release();
    },
  };
}
