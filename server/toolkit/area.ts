import type { TaskList } from "graphile-worker";
import type { AccountDataSection } from "./account-data.ts";
import type { HandlerMap } from "./http/router.ts";
import type { Services } from "./services.ts";

/** What an area's tasks may need of the house: the export and purge jobs walk every area's sections. */
export interface House {
  accountDataSections: readonly AccountDataSection[];
}

/** A running part of a worker process besides its jobs (a chat platform gateway, a sweep). */
export interface Connection {
  stop(): Promise<void>;
}

/**
 * An area's part of the house, exported by its `index.ts` (its only public surface) and listed
 * once in server/areas.ts: the operations it answers, its background tasks and schedule, what it
 * keeps running in a worker process, and its part of a user's data export and purge.
 */
export interface AreaModule<H extends Partial<HandlerMap> = Partial<HandlerMap>> {
  name: string;
  handlers: H;
  tasks?: (services: Services, house: House) => TaskList;
  /** graphile-worker crontab lines. */
  crontab?: readonly string[];
  connections?: (services: Services) => Connection;
  /** In archive order within the area. */
  accountData?: readonly AccountDataSection[];
  /** The tables this area owns: only its own files name them (test/foundation/table-ownership.test.ts). */
  tables?: readonly string[];
  /**
   * Owned tables whose `id` is the id of a stored reply: the quota lease sweep gives back the
   * message of a lease whose reply is in none of them (server/quota/usage-store.ts).
   */
  repliesStoredIn?: readonly string[];
}

/** Keeps each area's exact handler type, so that server/areas.ts can check the map is complete. */
export function defineArea<const H extends Partial<HandlerMap>>(area: AreaModule<H>): AreaModule<H> {
  return area;
}
