import type { APIPromise } from "../api-promise.ts";
import { init, unwrap } from "../core.ts";
import { GeneratedSocial } from "../generated/resources.ts";
import type { QueryOf, RequestOptions, ResponseOf } from "../types.ts";

/**
 * Social: follows, likes, public profiles, user search, the activity feed and share links.
 *
 * @example
 * await client.social.follow(userId);
 * for await (const item of client.social.feed()) console.log(item.type, item.persona.name);
 */
export class Social extends GeneratedSocial {
  /**
   * Users whose username or display name contains `q` (2 to 100 characters), best match first. Takes
   * the search text first, the rest of the query after it.
   * @example
   * const { data, total } = await client.social.search("mara", { limit: 5 });
   */
  search(q: string, query: Omit<QueryOf<"social_search">, "q"> = {}, options?: RequestOptions): APIPromise<ResponseOf<"social_search">> {
    return unwrap(this.core.raw.GET("/v1/social/search", { params: { query: { ...query, q } }, ...init(options) }));
  }
}
