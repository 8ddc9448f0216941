// The one list of the service's areas (docs/architecture.md, "Adding an area"). Everything an
// area adds to the house comes from its index.ts through this list: its operations, tasks,
// schedule, worker connections and its part of the data export and purge.
import type { TaskList } from "graphile-worker";
import type { AccountDataSection } from "./toolkit/account-data.ts";
import type { Connection } from "./toolkit/area.ts";
import type { HandlerMap } from "./toolkit/http/router.ts";
import type { Services } from "./toolkit/services.ts";
import { startLeaseSweep } from "./quota/lease-sweep.ts";
import { area as auth } from "./areas/auth/index.ts";
import { area as billing } from "./areas/billing/index.ts";
import { area as cards } from "./areas/cards/index.ts";
import { area as conversations } from "./areas/conversations/index.ts";
import { area as embeds } from "./areas/embeds/index.ts";
import { area as images } from "./areas/images/index.ts";
import { area as integrations } from "./areas/integrations/index.ts";
import { area as knowledge } from "./areas/knowledge/index.ts";
import { area as marketplace } from "./areas/marketplace/index.ts";
import { area as models } from "./areas/models/index.ts";
import { area as openai } from "./areas/openai/index.ts";
import { area as pages } from "./areas/pages/index.ts";
import { area as ops } from "./areas/ops/index.ts";
import { area as personas } from "./areas/personas/index.ts";
import { area as replies } from "./areas/replies/index.ts";
import { area as rooms } from "./areas/rooms/index.ts";
import { area as safety } from "./areas/safety/index.ts";
import { area as social } from "./areas/social/index.ts";
import { area as studio } from "./areas/studio/index.ts";
import { area as voice } from "./areas/voice/index.ts";
import { area as webhooks } from "./areas/webhooks/index.ts";

/** In data-export archive order: a user's personas first, their account and billing last. */
export const areas = [personas, cards, conversations, knowledge, studio, marketplace, social, rooms, auth, webhooks, integrations, models, embeds, safety, images, billing, voice, openai, replies, pages, ops] as const;

type Intersection<U> = (U extends unknown ? (part: U) => void : never) extends (whole: infer I) => void ? I : never;

/**
 * The handler of every operation in the contract. The type is the intersection of every area's
 * exact handler type, so the assignment to `HandlerMap` fails to check while one is missing.
 */
export const handlers: HandlerMap = Object.assign({}, ...areas.map((area) => area.handlers)) as Intersection<(typeof areas)[number]["handlers"]>;

/**
 * Every area's part of the data export and of the account purge, in archive order;
 * test/auth/account-sections.test.ts fails while any user-owned table of the catalog is claimed by none.
 */
export const accountDataSections: readonly AccountDataSection[] = areas.flatMap((area) => area.accountData ?? []);

/** Tasks of every area, by name. */
export function taskList(services: Services): TaskList {
  const house = { accountDataSections };
  return Object.assign({}, ...areas.map((area) => area.tasks?.(services, house) ?? {})) as TaskList;
}

/** Recurring schedule (graphile-worker crontab syntax). */
export const crontab = areas.flatMap((area) => area.crontab ?? []).join("\n");

/** Where the areas store replies, for the quota lease sweep. */
export const replyTables = areas.flatMap((area) => area.repliesStoredIn ?? []);

/** What a worker process runs besides its jobs: the areas' connections (chat platform gateways) and the quota lease sweep. */
export function startConnections(services: Services): Connection {
  const running = [...areas.flatMap((area) => (area.connections ? [area.connections(services)] : [])), startLeaseSweep(services, replyTables)];
  return { stop: async () => void (await Promise.all(running.map((part) => part.stop()))) };
}
