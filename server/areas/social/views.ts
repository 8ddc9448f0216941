import type { components } from "../../../generated/openapi.d.ts";
import { shownLink, type Where } from "../../toolkit/links.ts";
import type { FeedRow, FollowEntryRow, FollowRow, LikedEntryRow, LikeRow, ProfileRow, ShareRow, UserHitRow } from "./store.ts";

// Social rows as the contract shows them. Nothing here ever carries an e-mail address. `where`
// makes a stored link absolute (server/toolkit/links.ts).

type Schemas = components["schemas"];

export const toFollow = (row: FollowRow): Schemas["Follow"] => ({
  id: row.id,
  follower_id: row.follower_id,
  following_id: row.following_id,
  created_at: row.created_at.toISOString(),
});

export const toFollowEntry = (row: FollowEntryRow, where: Where): Schemas["FollowEntry"] => ({
  id: row.id,
  username: row.username,
  avatar_url: shownLink(where, row.avatar_url),
  followed_at: row.followed_at.toISOString(),
});

export const toProfile = (row: ProfileRow, where: Where): Schemas["PublicProfile"] => ({
  id: row.id,
  username: row.username,
  bio: row.bio,
  avatar_url: shownLink(where, row.avatar_url),
  persona_count: row.persona_count,
  follower_count: row.follower_count,
  following_count: row.following_count,
  created_at: row.created_at.toISOString(),
});

export const toUserHit = (row: UserHitRow, where: Where): Schemas["UserHit"] => ({
  id: row.id,
  username: row.username,
  avatar_url: shownLink(where, row.avatar_url),
  follower_count: row.follower_count,
});

export const toLike = (row: LikeRow): Schemas["Like"] => ({
  id: row.id,
  user_id: row.user_id,
  persona_id: row.persona_id,
  created_at: row.created_at.toISOString(),
});

export const toLikedEntry = (row: LikedEntryRow, where: Where): Schemas["LikedEntry"] => ({
  persona_id: row.persona_id,
  name: row.name,
  tagline: row.description,
  avatar_url: shownLink(where, row.avatar_url),
  creator: { id: row.creator_id, username: row.creator_username },
  liked_at: row.liked_at.toISOString(),
});

export const toFeedItem = (row: FeedRow, where: Where): Schemas["FeedItem"] => ({
  type: row.type,
  persona: {
    id: row.persona_id,
    name: row.name,
    tagline: row.description,
    avatar_url: shownLink(where, row.avatar_url),
    like_count: row.like_count,
  },
  creator: { id: row.creator_id, username: row.creator_username },
  ...(row.type === "new_persona" ? { published_at: row.at.toISOString() } : { trending_since: row.at.toISOString() }),
});

export const toShare = (row: ShareRow, shareUrl: string): Schemas["Share"] => ({
  share_url: shareUrl,
  platform: row.platform as Schemas["SharePlatform"],
  persona_id: row.persona_id,
  expires_at: row.expires_at ? row.expires_at.toISOString() : null,
});
