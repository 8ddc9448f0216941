import type { Knex } from "knex";
import { insertOrFind } from "../../toolkit/db/rows.ts";
import { offsetPage } from "../../toolkit/db/paging.ts";
import type { PageWindow } from "../../toolkit/http/paging.ts";

// All SQL of the social area. A deleted account (deleted_at set, grace period included) and a
// suspended one (suspended_at set, issue 41) are absent from every read here: their follows, likes
// and personas are joined away, never counted. A taken-down profile or persona is not shown either.

export interface FollowRow {
  id: string;
  follower_id: string;
  following_id: string;
  created_at: Date;
}

export interface FollowEntryRow {
  id: string;
  username: string;
  avatar_url: string | null;
  followed_at: Date;
}

export interface ProfileRow {
  id: string;
  username: string;
  bio: string | null;
  avatar_url: string | null;
  created_at: Date;
  persona_count: number;
  follower_count: number;
  following_count: number;
}

export interface UserHitRow {
  id: string;
  username: string;
  avatar_url: string | null;
  follower_count: number;
}

export interface LikeRow {
  id: string;
  user_id: string;
  persona_id: string;
  created_at: Date;
}

export interface LikedEntryRow {
  persona_id: string;
  name: string;
  description: string;
  avatar_url: string | null;
  creator_id: string;
  creator_username: string;
  liked_at: Date;
}

export interface FeedRow {
  type: "new_persona" | "trending";
  at: Date;
  persona_id: string;
  name: string;
  description: string;
  avatar_url: string | null;
  creator_id: string;
  creator_username: string;
  like_count: number;
}

export interface ShareRow {
  id: string;
  code: string;
  user_id: string;
  persona_id: string;
  platform: string;
  created_at: Date;
  expires_at: Date | null;
}

const count = (value: unknown) => Number(value ?? 0);

// ---------------------------------------------------------------- users

/** Whether the user exists and is neither deleted nor suspended. */
export async function isLiveUser(knex: Knex, id: string): Promise<boolean> {
  return Boolean(await knex("users").where({ id }).whereNull("deleted_at").whereNull("suspended_at").first("id"));
}

/** The profile of a live user with its exact counts, or undefined. */
export async function findProfile(knex: Knex, id: string): Promise<ProfileRow | undefined> {
  const row = await knex("users as u")
    .where("u.id", id)
    .whereNull("u.deleted_at")
    .whereNull("u.suspended_at")
    .whereNull("u.profile_taken_down_at")
    .first(
      "u.id",
      "u.username",
      "u.bio",
      "u.avatar_url",
      "u.created_at",
      knex("personas").where("creator_id", id).where("is_public", true).whereNull("taken_down_at").count("*").as("persona_count"),
      liveCount(knex, "following_id", "follower_id", id).as("follower_count"),
      liveCount(knex, "follower_id", "following_id", id).as("following_count"),
    );
  if (!row) return undefined;
  return { ...row, persona_count: count(row.persona_count), follower_count: count(row.follower_count), following_count: count(row.following_count) };
}

/** Follows where `side` is `id`, counting only those whose other side is a live account. */
function liveCount(knex: Knex, side: "following_id" | "follower_id", other: "following_id" | "follower_id", id: string) {
  return knex("follows as f").join("users as o", "o.id", `f.${other}`).where(`f.${side}`, id).whereNull("o.deleted_at").whereNull("o.suspended_at").count("*");
}

/**
 * "The account behind `column` is deleted or suspended", for NOT EXISTS: such accounts are few, so
 * counting live rows checks them against that small set instead of visiting one users row per
 * follow or like counted. Every user id here has a users row (foreign keys).
 */
function deletedUser(column: string): string {
  return `SELECT 1 FROM users d WHERE d.id = ${column} AND (d.deleted_at IS NOT NULL OR d.suspended_at IS NOT NULL)`;
}

/** LIKE treats `%`, `_` and the escape character itself as special; a search for them means them. */
function likeEscape(text: string): string {
  return text.replace(/[\\%_]/g, "\\$&");
}

/**
 * Live users whose username or display name contains `q` (any case, every character literal),
 * best first: an exact name, then a name starting with `q`, then a name containing it; within each,
 * by trigram similarity to `q`, then username. The trigram indexes serve the ILIKE filter. One
 * statement. A 3-character `q` matches thousands of users and `similarity` is the costly part of
 * ranking them, so it is computed only for the tiers the page reaches (the tier of the `limit`-th
 * match by tier alone); followers are counted for the page only.
 */
export async function searchUsers(knex: Knex, q: string, limit: number): Promise<{ rows: UserHitRow[]; total: number }> {
  const contains = `%${likeEscape(q)}%`;
  const starts = `${likeEscape(q)}%`;
  const result = await knex.raw<{ rows: (UserHitRow & { total: string; follower_count: string })[] }>(
    `WITH matches AS MATERIALIZED (
       SELECT u.id, u.username, u.display_name, u.avatar_url,
              CASE WHEN lower(u.username) = lower(:q) OR lower(u.display_name) = lower(:q) THEN 0
                   WHEN u.username ILIKE :starts ESCAPE '\\' OR u.display_name ILIKE :starts ESCAPE '\\' THEN 1
                   ELSE 2 END AS tier
         FROM users u
        WHERE u.deleted_at IS NULL AND u.suspended_at IS NULL AND u.profile_taken_down_at IS NULL
          AND (u.username ILIKE :contains ESCAPE '\\' OR u.display_name ILIKE :contains ESCAPE '\\')
     ), last_tier AS (
       SELECT coalesce((SELECT tier FROM matches ORDER BY tier OFFSET :limit - 1 LIMIT 1), 2) AS tier
     ), page AS (
       SELECT m.id, m.username, m.avatar_url, m.tier,
              greatest(similarity(m.username, :q), coalesce(similarity(m.display_name, :q), 0)) AS score
         FROM matches m, last_tier
        WHERE m.tier <= last_tier.tier
        ORDER BY m.tier, score DESC, lower(m.username) COLLATE "C", m.id
        LIMIT :limit
     )
     SELECT page.id, page.username, page.avatar_url, (SELECT count(*) FROM matches) AS total,
            (SELECT count(*) FROM follows f WHERE f.following_id = page.id AND NOT EXISTS (${deletedUser("f.follower_id")})) AS follower_count
       FROM page
      ORDER BY page.tier, page.score DESC, lower(page.username) COLLATE "C", page.id`,
    { q, starts, contains, limit },
  );
  const rows = result.rows.map((row) => ({ id: row.id, username: row.username, avatar_url: row.avatar_url, follower_count: count(row.follower_count) }));
  return { rows, total: count(result.rows[0]?.total) };
}

// ---------------------------------------------------------------- follows

/** Inserts the follow unless it exists; returns the one that exists either way. */
export function insertOrFindFollow(knex: Knex, row: FollowRow): Promise<FollowRow> {
  return insertOrFind(knex, "follows", row, ["follower_id", "following_id"]);
}

export async function deleteFollow(knex: Knex, followerId: string, followingId: string): Promise<void> {
  await knex("follows").where({ follower_id: followerId, following_id: followingId }).delete();
}

/** The live users on the other side of `userId`'s follows, most recent follow first. */
export async function listFollows(
  knex: Knex,
  userId: string,
  direction: "followers" | "following",
  window: PageWindow,
): Promise<{ rows: FollowEntryRow[]; total: number }> {
  const [mine, theirs] = direction === "followers" ? ["following_id", "follower_id"] : ["follower_id", "following_id"];
  const query = knex("follows as f")
    .join("users as u", "u.id", `f.${theirs}`)
    .where(`f.${mine}`, userId)
    .whereNull("u.deleted_at")
    .whereNull("u.suspended_at")
    .select("u.id", "u.username", "u.avatar_url", "f.created_at as followed_at");
  return offsetPage(query, "f.created_at DESC, f.id DESC", window);
}

// ---------------------------------------------------------------- likes

export function insertOrFindLike(knex: Knex, row: LikeRow): Promise<LikeRow> {
  return insertOrFind(knex, "likes", row, ["user_id", "persona_id"]);
}

/** Likes of the persona by live accounts, as the feed counts them. */
export async function countLikesOf(knex: Knex, personaId: string): Promise<number> {
  const result = await knex.raw<{ rows: { n: string }[] }>(`SELECT count(*) AS n FROM likes l WHERE l.persona_id = ? AND NOT EXISTS (${deletedUser("l.user_id")})`, [personaId]);
  return count(result.rows[0]?.n);
}

export async function deleteLike(knex: Knex, userId: string, personaId: string): Promise<void> {
  await knex("likes").where({ user_id: userId, persona_id: personaId }).delete();
}

/**
 * The personas `userId` likes that they may still see (public, or their own) and whose creator is
 * live, most recent like first.
 */
export async function listLikes(knex: Knex, userId: string, window: PageWindow): Promise<{ rows: LikedEntryRow[]; total: number }> {
  const query = knex("likes as l")
    .join("personas as p", "p.id", "l.persona_id")
    .join("users as c", "c.id", "p.creator_id")
    .where("l.user_id", userId)
    .whereNull("c.deleted_at")
    .where((visible) => visible.where((shown) => shown.where("p.is_public", true).whereNull("p.taken_down_at").whereNull("c.suspended_at")).orWhere("p.creator_id", userId))
    .select(
      "l.persona_id",
      "p.name",
      "p.description",
      "p.avatar_url",
      "c.id as creator_id",
      "c.username as creator_username",
      "l.created_at as liked_at",
    );
  return offsetPage(query, "l.created_at DESC, l.id DESC", window);
}

// ---------------------------------------------------------------- feed

/**
 * The caller's feed: public personas of the live users they follow (at `published_at`) and the
 * trending set (at `trending_since`). A persona that is both appears once, at the later of its two
 * times. Newest first, persona id last, so pages neither repeat nor skip.
 *
 * One statement, always (the total comes back on a row even past the last page). The followed
 * creators' personas are read once, from index-only scans, and serve both the exact total and the
 * page; only their newest `offset + limit` can reach the page (each persona has one creator, so
 * they are distinct, and merging in the trending set only moves items earlier), so only those are
 * merged with the trending set. Display columns and likes are read for the page only.
 */
export async function feedPage(knex: Knex, userId: string, ratings: readonly string[], window: PageWindow): Promise<{ rows: FeedRow[]; total: number }> {
  const result = await knex.raw<{ rows: (Omit<FeedRow, "like_count"> & { persona_id: string | null; total: string; like_count: string })[] }>(
    `WITH mine AS MATERIALIZED (
       SELECT p.id AS persona_id, coalesce(p.published_at, p.created_at) AS at
         FROM follows f
         JOIN personas p ON p.creator_id = f.following_id AND p.is_public AND p.taken_down_at IS NULL AND p.content_rating = ANY(:ratings)
        WHERE f.follower_id = :userId AND NOT EXISTS (${deletedUser("f.following_id")})
     ), trending AS MATERIALIZED (
       SELECT t.persona_id, t.trending_since AS at
         FROM persona_trending t
         JOIN personas p ON p.id = t.persona_id AND p.is_public AND p.taken_down_at IS NULL AND p.content_rating = ANY(:ratings)
        WHERE NOT EXISTS (${deletedUser("p.creator_id")})
     ), candidates AS (
       (SELECT persona_id, 'new_persona' AS type, at FROM mine ORDER BY at DESC, persona_id DESC LIMIT :reach)
       UNION ALL
       SELECT persona_id, 'trending', at FROM trending
     ), items AS (
       SELECT DISTINCT ON (persona_id) persona_id, type, at FROM candidates ORDER BY persona_id, at DESC, type
     ), page AS (
       SELECT persona_id, type, at FROM items ORDER BY at DESC, persona_id DESC LIMIT :limit OFFSET :offset
     ), totals AS (
       SELECT (SELECT count(*) FROM mine)
              + (SELECT count(*) FROM trending t WHERE NOT EXISTS (SELECT 1 FROM mine m WHERE m.persona_id = t.persona_id)) AS total
     )
     SELECT totals.total, page.type, page.at, p.id AS persona_id, p.name, p.description, p.avatar_url,
            c.id AS creator_id, c.username AS creator_username,
            (SELECT count(*) FROM likes l WHERE l.persona_id = page.persona_id AND NOT EXISTS (${deletedUser("l.user_id")})) AS like_count
       FROM totals
       LEFT JOIN (page
         JOIN personas p ON p.id = page.persona_id
         JOIN users c ON c.id = p.creator_id) ON true
      ORDER BY page.at DESC, page.persona_id DESC`,
    { userId, ratings: [...ratings], reach: window.offset + window.limit, limit: window.limit, offset: window.offset },
  );
  const total = count(result.rows[0]?.total);
  const rows = result.rows
    .filter((row) => row.persona_id !== null)
    .map(({ total: _total, like_count, ...row }) => ({ ...row, persona_id: row.persona_id!, like_count: count(like_count) }));
  return { rows, total };
}

// ---------------------------------------------------------------- shares

export async function insertShare(knex: Knex, row: ShareRow): Promise<ShareRow> {
  const [inserted] = await knex("persona_shares").insert(row).returning("*");
  return inserted as ShareRow;
}

/** The user's newest link for this persona and platform that still works at `now`. */
export async function findUsableShare(knex: Knex, userId: string, personaId: string, platform: string, now: Date): Promise<ShareRow | undefined> {
  return knex("persona_shares")
    .where({ user_id: userId, persona_id: personaId, platform })
    .where((live) => live.whereNull("expires_at").orWhere("expires_at", ">", now))
    .orderBy([{ column: "created_at", order: "desc" }, { column: "id", order: "desc" }])
    .first();
}

/**
 * The link behind `code` if it may be opened at `now`: not expired, its persona public, its
 * persona's creator and its sharer both live accounts.
 */
export async function findOpenableShare(
  knex: Knex,
  code: string,
  now: Date,
): Promise<{ id: string; persona_id: string; expires_at: Date | null } | undefined> {
  return knex("persona_shares as s")
    .join("personas as p", "p.id", "s.persona_id")
    .join("users as c", "c.id", "p.creator_id")
    .join("users as sharer", "sharer.id", "s.user_id")
    .where("s.code", code)
    .where("p.is_public", true)
    .whereNull("p.taken_down_at")
    .whereNull("c.deleted_at")
    .whereNull("c.suspended_at")
    .whereNull("sharer.deleted_at")
    .where((live) => live.whereNull("s.expires_at").orWhere("s.expires_at", ">", now))
    .first("s.id", "s.persona_id", "s.expires_at");
}

export interface ShareOpens {
  id: string;
  opens: number;
  lastAt: Date;
}

/** Adds counted opens to their links in one statement. */
export async function addShareOpens(knex: Knex, batch: ShareOpens[]): Promise<void> {
  if (!batch.length) return;
  const values = batch.map(() => "(?::uuid, ?::bigint, ?::timestamptz)").join(", ");
  await knex.raw(
    `UPDATE persona_shares s
        SET open_count = s.open_count + v.opens,
            last_opened_at = greatest(s.last_opened_at, v.last_at)
       FROM (VALUES ${values}) AS v(id, opens, last_at)
      WHERE s.id = v.id`,
    batch.flatMap((entry) => [entry.id, entry.opens, entry.lastAt]),
  );
}

/** Opens of a persona's share links per platform (for the studio's analytics). */
export async function shareOpensByPlatform(knex: Knex, personaId: string): Promise<Map<string, number>> {
  const rows = await knex("persona_shares").where("persona_id", personaId).groupBy("platform").select("platform").sum({ n: "open_count" });
  return new Map((rows as { platform: string; n: unknown }[]).map((row) => [row.platform, count(row.n)]));
}
