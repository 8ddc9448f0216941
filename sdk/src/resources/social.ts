import { APIPromise } from "../api-promise.ts";
import { init, list, settle, unwrap, type Core } from "../core.ts";
import type { PageIterator } from "../pagination.ts";
import type { QueryOf, RequestBody, RequestOptions, ResponseOf, Schemas } from "../types.ts";

/**
 * Social: follows, likes, public profiles, user search, the activity feed and share links.
 *
 * @example
 * await client.social.follow(userId);
 * for await (const item of client.social.feed()) console.log(item.type, item.persona.name);
 */
export class Social {
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
  }

  /**
   * Follows a user; following someone already followed answers the same record (NotFoundError for
   * an unknown or deleted user, ValidationError for yourself).
   * @example
   * const follow = await client.social.follow(userId);
   */
  follow(userId: string, options?: RequestOptions): APIPromise<ResponseOf<"social_follow">> {
    return unwrap(this.#core.raw.POST("/v1/social/follow/{user_id}", { params: { path: { user_id: userId } }, ...init(options) }));
  }

  /**
   * Stops following a user; succeeds whether or not the caller followed them.
   * @example
   * await client.social.unfollow(userId);
   */
  unfollow(userId: string, options?: RequestOptions): APIPromise<void> {
    const call = this.#core.raw.DELETE("/v1/social/follow/{user_id}", { params: { path: { user_id: userId } }, ...init(options) });
    return new APIPromise(call.then((result) => ({ data: undefined, response: settle(result).response })));
  }

  /**
   * The caller's followers, most recent first, page by page.
   * @example
   * for await (const follower of client.social.followers()) console.log(follower.username);
   */
  followers(query: QueryOf<"social_followers"> = {}, options?: RequestOptions): PageIterator<Schemas["FollowEntry"], ResponseOf<"social_followers">> {
    return list((q) => this.#core.raw.GET("/v1/social/followers", { params: { query: q }, ...init(options) }), query);
  }

  /**
   * Users the caller follows, most recent first, page by page.
   * @example
   * const first = await client.social.following({ limit: 10 });
   */
  following(query: QueryOf<"social_following"> = {}, options?: RequestOptions): PageIterator<Schemas["FollowEntry"], ResponseOf<"social_following">> {
    return list((q) => this.#core.raw.GET("/v1/social/following", { params: { query: q }, ...init(options) }), query);
  }

  /**
   * A user's public profile with follower, following and public persona counts.
   * @example
   * const { follower_count } = await client.social.profile(userId);
   */
  profile(userId: string, options?: RequestOptions): APIPromise<ResponseOf<"social_profile">> {
    return unwrap(this.#core.raw.GET("/v1/social/profile/{user_id}", { params: { path: { user_id: userId } }, ...init(options) }));
  }

  /**
   * Users whose username or display name contains `q` (2 to 100 characters), best match first.
   * @example
   * const { data, total } = await client.social.search("mara", { limit: 5 });
   */
  search(q: string, query: Omit<QueryOf<"social_search">, "q"> = {}, options?: RequestOptions): APIPromise<ResponseOf<"social_search">> {
    return unwrap(this.#core.raw.GET("/v1/social/search", { params: { query: { ...query, q } }, ...init(options) }));
  }

  /**
   * Likes a persona the caller can see; liking it again answers the same like.
   * @example
   * await client.social.like(personaId);
   */
  like(personaId: string, options?: RequestOptions): APIPromise<ResponseOf<"social_like">> {
    return unwrap(this.#core.raw.POST("/v1/social/likes/{persona_id}", { params: { path: { persona_id: personaId } }, ...init(options) }));
  }

  /**
   * Removes the caller's like; succeeds whether or not there was one.
   * @example
   * await client.social.unlike(personaId);
   */
  unlike(personaId: string, options?: RequestOptions): APIPromise<ResponseOf<"social_unlike">> {
    return unwrap(this.#core.raw.DELETE("/v1/social/likes/{persona_id}", { params: { path: { persona_id: personaId } }, ...init(options) }));
  }

  /**
   * Personas the caller likes, most recent first, page by page.
   * @example
   * for await (const liked of client.social.likes()) console.log(liked.name, liked.creator.username);
   */
  likes(query: QueryOf<"social_likes"> = {}, options?: RequestOptions): PageIterator<Schemas["LikedEntry"], ResponseOf<"social_likes">> {
    return list((q) => this.#core.raw.GET("/v1/social/likes", { params: { query: q }, ...init(options) }), query);
  }

  /**
   * The activity feed: new public personas of followed users and trending personas, newest first.
   * @example
   * const page = await client.social.feed({ limit: 20 });
   */
  feed(query: QueryOf<"social_feed"> = {}, options?: RequestOptions): PageIterator<Schemas["FeedItem"], ResponseOf<"social_feed">> {
    return list((q) => this.#core.raw.GET("/v1/social/feed", { params: { query: q }, ...init(options) }), query);
  }

  /**
   * A share link for a persona the caller can see; the same working link when asked again.
   * @example
   * const { share_url } = await client.social.share(personaId, { platform: "link" });
   */
  share(personaId: string, body: RequestBody<"social_share">, options?: RequestOptions): APIPromise<ResponseOf<"social_share">> {
    return unwrap(this.#core.raw.POST("/v1/social/share/{persona_id}", { params: { path: { persona_id: personaId } }, body, ...init(options) }));
  }
}
