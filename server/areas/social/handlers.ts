import { pageBody, pageNumber, pageWindow } from "../../toolkit/http/paging.ts";
import { HANDLED, type Handler, type HandlerMap } from "../../toolkit/http/router.ts";
import * as social from "./service.ts";
import { toFeedItem, toFollow, toFollowEntry, toLike, toLikedEntry, toProfile, toShare, toUserHit } from "./views.ts";

const social_follow: Handler<"social_follow"> = async ({ services, principal, params }) => ({
  status: 200,
  body: toFollow(await social.follow(services, principal.userId, params.user_id)),
});

const social_unfollow: Handler<"social_unfollow"> = async ({ services, principal, params }) => {
  await social.unfollow(services, principal.userId, params.user_id);
  return { status: 204, body: undefined };
};

const social_followers: Handler<"social_followers"> = async ({ services, principal, query }) => {
  const window = pageWindow(query);
  return { status: 200, body: pageBody(await social.listFollowers(services, principal.userId, window), window, (row) => toFollowEntry(row, services.config)) };
};

const social_following: Handler<"social_following"> = async ({ services, principal, query }) => {
  const window = pageWindow(query);
  return { status: 200, body: pageBody(await social.listFollowing(services, principal.userId, window), window, (row) => toFollowEntry(row, services.config)) };
};

const social_profile: Handler<"social_profile"> = async ({ services, params }) => ({
  status: 200,
  body: toProfile(await social.profile(services, params.user_id), services.config),
});

const social_search: Handler<"social_search"> = async ({ services, query }) => {
  const limit = pageNumber(query, "limit", 20);
  const { rows, total } = await social.search(services, query.q, limit);
  return { status: 200, body: { data: rows.map((row) => toUserHit(row, services.config)), total, limit } };
};

const social_like: Handler<"social_like"> = async ({ services, principal, params }) => ({
  status: 200,
  body: toLike(await social.like(services, principal.userId, params.persona_id)),
});

const social_unlike: Handler<"social_unlike"> = async ({ services, principal, params }) => {
  await social.unlike(services, principal.userId, params.persona_id);
  return { status: 200, body: { success: true } };
};

const social_likes: Handler<"social_likes"> = async ({ services, principal, query }) => {
  const window = pageWindow(query);
  return { status: 200, body: pageBody(await social.listLiked(services, principal.userId, window), window, (row) => toLikedEntry(row, services.config)) };
};

const social_feed: Handler<"social_feed"> = async ({ services, principal, query }) => {
  const window = pageWindow(query);
  return { status: 200, body: pageBody(await social.feed(services, principal.userId, window), window, (row) => toFeedItem(row, services.config)) };
};

const social_share: Handler<"social_share"> = async ({ services, principal, params, body }) => {
  const row = await social.share(services, principal.userId, params.persona_id, body.platform);
  return { status: 200, body: toShare(row, social.shareUrl(services, row.code)) };
};

const social_open_share: Handler<"social_open_share"> = async ({ services, params, res }) => {
  const location = await social.openShare(services, params.code);
  // Opens are counted per open: a cached redirect would go uncounted.
  res.status(302).set({ Location: location, "Cache-Control": "no-store", "Referrer-Policy": "no-referrer" }).end();
  return HANDLED;
};

export const handlers = {
  social_follow,
  social_unfollow,
  social_followers,
  social_following,
  social_profile,
  social_search,
  social_like,
  social_unlike,
  social_likes,
  social_feed,
  social_share,
  social_open_share,
} satisfies Partial<HandlerMap>;
