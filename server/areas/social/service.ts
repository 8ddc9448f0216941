import { randomBytes } from "node:crypto";
import { v7 as uuidv7 } from "uuid";
import { publicBaseUrl } from "../../toolkit/config.ts";
import { personaPageLink } from "../../toolkit/person-links.ts";
import type { PageWindow } from "../../toolkit/http/paging.ts";
import { invalidField, notFound } from "../../toolkit/http/error-catalogue.ts";
import { isUuid } from "../../toolkit/http/text.ts";
import { ratingsShownTo, requireVisiblePersona } from "../personas/index.ts";
import type { PersonaRow } from "../personas/index.ts";
import type { Services } from "../../toolkit/services.ts";
import { shareOpenCounter } from "./share-opens.ts";
import { openableShare } from "./share-targets.ts";
import {
  countLikesOf,
  deleteFollow,
  deleteLike,
  feedPage,
  findProfile,
  findUsableShare,
  insertOrFindFollow,
  insertOrFindLike,
  insertShare,
  isLiveUser,
  listFollows,
  listLikes,
  searchUsers,
  shareOpensByPlatform,
  type FollowRow,
  type LikeRow,
  type ShareRow,
} from "./store.ts";

// Rules of the social area (docs/design/social.md). A user who does not exist or whose account
// is deleted (grace period included) is 404 everywhere here; a persona the caller may not see is 404.

/** Random bytes in a share code: 72 bits, 12 characters of base64url. */
const SHARE_CODE_BYTES = 9;

const userNotFound = () => notFound("User");

async function requireLiveUser(services: Services, userId: string): Promise<void> {
  if (!isUuid(userId) || !(await isLiveUser(services.db.knex, userId))) throw userNotFound();
}

/** A persona the caller may see, made by a live account. */
async function requireSocialPersona(services: Services, userId: string, personaId: string): Promise<PersonaRow> {
  const persona = await requireVisiblePersona(services, userId, personaId);
  if (!(await isLiveUser(services.db.knex, persona.creator_id))) throw notFound("Persona");
  return persona;
}

export async function follow(services: Services, userId: string, targetId: string): Promise<FollowRow> {
  // Ids compare as UUIDs, whatever the case they are written in.
  if (targetId.toLowerCase() === userId.toLowerCase()) {
    throw invalidField("/path/user_id", "is the caller", "You cannot follow yourself");
  }
  await requireLiveUser(services, targetId);
  return insertOrFindFollow(services.db.knex, { id: uuidv7(), follower_id: userId, following_id: targetId, created_at: services.now() });
}

/** Succeeds whether or not the caller followed them, and whoever they are. */
export async function unfollow(services: Services, userId: string, targetId: string): Promise<void> {
  if (isUuid(targetId)) await deleteFollow(services.db.knex, userId, targetId);
}

export async function listFollowers(services: Services, userId: string, window: PageWindow) {
  return listFollows(services.db.knex, userId, "followers", window);
}

export async function listFollowing(services: Services, userId: string, window: PageWindow) {
  return listFollows(services.db.knex, userId, "following", window);
}

export async function profile(services: Services, userId: string) {
  const row = isUuid(userId) ? await findProfile(services.db.knex, userId) : undefined;
  if (!row) throw userNotFound();
  return row;
}

/** Search text shorter than this, once trimmed, is refused (the contract counts untrimmed). */
const MIN_QUERY_LENGTH = 2;

export async function search(services: Services, rawQuery: string, limit: number) {
  const q = rawQuery.trim();
  if ([...q].length < MIN_QUERY_LENGTH) {
    const message = `must have at least ${MIN_QUERY_LENGTH} characters besides spaces`;
    throw invalidField("/query/q", message);
  }
  return searchUsers(services.db.knex, q, limit);
}

export async function like(services: Services, userId: string, personaId: string): Promise<LikeRow> {
  const persona = await requireSocialPersona(services, userId, personaId);
  return insertOrFindLike(services.db.knex, { id: uuidv7(), user_id: userId, persona_id: persona.id, created_at: services.now() });
}

/** Succeeds whether or not the caller liked it. */
export async function unlike(services: Services, userId: string, personaId: string): Promise<void> {
  await deleteLike(services.db.knex, userId, personaId);
}

/** How many live accounts like the persona (its public page shows it). */
export async function likeCount(services: Services, personaId: string): Promise<number> {
  return isUuid(personaId) ? countLikesOf(services.db.knex, personaId) : 0;
}

export async function listLiked(services: Services, userId: string, window: PageWindow) {
  return listLikes(services.db.knex, userId, window);
}

/** The caller's feed, of the ratings the caller is shown (issue 41). */
export async function feed(services: Services, userId: string, window: PageWindow) {
  return feedPage(services.db.knex, userId, await ratingsShownTo(services, userId), window);
}

/** Where a share code lives on this service. */
export function shareUrl(services: Services, code: string): string {
  return `${publicBaseUrl(services.config)}/v1/shares/${code}`;
}

/**
 * The persona's public page, where share links lead: `<APP_BASE_URL>/p/<persona id>`, else the
 * service's own page (toolkit/person-links.ts; docs/adr/0312-app-base-url-and-person-facing-links.md).
 */
export function personaPageUrl(services: Services, personaId: string): string {
  return personaPageLink(services.config, personaId);
}

/**
 * A share link for a persona the caller may see (their own private one included: its link works
 * once it is public). Asking again for the same persona and platform gives the same working link.
 */
export async function share(services: Services, userId: string, personaId: string, platform: string): Promise<ShareRow> {
  const persona = await requireSocialPersona(services, userId, personaId);
  const now = services.now();
  const existing = await findUsableShare(services.db.knex, userId, persona.id, platform, now);
  if (existing) return existing;
  return insertShare(services.db.knex, {
    id: uuidv7(),
    code: randomBytes(SHARE_CODE_BYTES).toString("base64url"),
    user_id: userId,
    persona_id: persona.id,
    platform,
    created_at: now,
    expires_at: null,
  });
}

/**
 * Where an open of `code` goes; the link is resolved through a short-lived cache
 * (share-targets.ts) and the open counted after the answer (share-opens.ts).
 */
export async function openShare(services: Services, code: string): Promise<string> {
  const now = services.now();
  const found = await openableShare(services, code, now);
  if (!found) throw notFound("Share link");
  shareOpenCounter(services).add(found.id, now);
  return personaPageUrl(services, found.persona_id);
}

/** Opens of a persona's share links per platform: what the studio's analytics may show. */
export async function shareOpens(services: Services, personaId: string): Promise<Map<string, number>> {
  return shareOpensByPlatform(services.db.knex, personaId);
}
