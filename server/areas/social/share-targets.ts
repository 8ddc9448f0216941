import { LRUCache } from "lru-cache";
import type { Services } from "../../toolkit/services.ts";
import { findOpenableShare } from "./store.ts";

/**
 * How long a resolved share link is trusted without asking the database again. A link that stops
 * opening (persona made private or deleted, account deleted, link expired) keeps redirecting for
 * at most this long in a process that opened it just before; the page it leads to is the
 * persona's own, which then shows the persona's current state. In exchange a popular link costs
 * no database round trip per open.
 */
export const SHARE_TARGET_TTL_MS = 10_000;
const MAX_CACHED_LINKS = 10_000;

interface Target {
  id: string;
  persona_id: string;
}

/** This process's cache of resolved links (`services.areas.shareTargets`, created in runtime.ts). */
export type ShareTargets = LRUCache<string, Target>;

export function createShareTargets(): ShareTargets {
  return new LRUCache<string, Target>({ max: MAX_CACHED_LINKS, ttl: SHARE_TARGET_TTL_MS });
}

/** The link behind `code` if it opens now, from this process's short-lived cache or the database. */
export async function openableShare(services: Services, code: string, now: Date): Promise<Target | undefined> {
  const cache = services.areas.shareTargets;
  const cached = cache.get(code);
  if (cached) return cached;
  const found = await findOpenableShare(services.db.knex, code, now);
  if (!found) return undefined;
  const target = { id: found.id, persona_id: found.persona_id };
  // Never trusted past the link's own expiry.
  const ttl = found.expires_at ? Math.min(SHARE_TARGET_TTL_MS, found.expires_at.getTime() - now.getTime()) : SHARE_TARGET_TTL_MS;
  if (ttl > 0) cache.set(code, target, { ttl });
  return target;
}
