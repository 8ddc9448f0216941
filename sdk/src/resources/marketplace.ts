import type { APIPromise } from "../api-promise.ts";
import { init, list, unwrap, type Core } from "../core.ts";
import type { PageIterator } from "../pagination.ts";
import type { IdempotentRequestOptions, QueryOf, RequestBody, RequestOptions, ResponseOf, Schemas } from "../types.ts";

/**
 * The marketplace: browsing needs no credentials; rating and `use` act as the caller.
 *
 * @example
 * for await (const listing of client.marketplace.list({ q: "astronomy", sort: "top_rated" })) console.log(listing.name);
 * const { data: copy } = await client.marketplace.use(listingId);
 */
export class Marketplace {
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
  }

  /**
   * Published listings, filtered by category and free text, page by page.
   * @example
   * const page = await client.marketplace.list({ category: "roleplay", sort: "trending", limit: 10 });
   */
  list(query: QueryOf<"marketplace_list"> = {}, options?: RequestOptions): PageIterator<Schemas["Listing"], ResponseOf<"marketplace_list">> {
    return list((q) => this.#core.raw.GET("/v1/marketplace", { params: { query: q }, ...init(options) }), query);
  }

  /**
   * The featured shelf, with the reason for each listing.
   * @example
   * const { data } = await client.marketplace.featured();
   */
  featured(options?: RequestOptions): APIPromise<ResponseOf<"marketplace_featured">> {
    return unwrap(this.#core.raw.GET("/v1/marketplace/featured", { ...init(options) }));
  }

  /**
   * Every category with its number of listings.
   * @example
   * const { data } = await client.marketplace.categories();
   */
  categories(options?: RequestOptions): APIPromise<ResponseOf<"marketplace_categories">> {
    return unwrap(this.#core.raw.GET("/v1/marketplace/categories", { ...init(options) }));
  }

  /**
   * One listing with its rating distribution and sample messages.
   * @example
   * const { data } = await client.marketplace.get(listingId);
   */
  get(listingId: string, options?: RequestOptions): APIPromise<ResponseOf<"marketplace_get">> {
    return unwrap(this.#core.raw.GET("/v1/marketplace/{id}", { params: { path: { id: listingId } }, ...init(options) }));
  }

  /**
   * Rates a listing (1-5, optional review); rating again replaces your earlier rating.
   * @example
   * await client.marketplace.rate(listingId, { rating: 5, review: "Great." });
   */
  rate(listingId: string, body: RequestBody<"marketplace_rate">, options?: IdempotentRequestOptions): APIPromise<ResponseOf<"marketplace_rate">> {
    return unwrap(this.#core.raw.POST("/v1/marketplace/{id}/rate", { params: { path: { id: listingId } }, body, ...init(options) }));
  }

  /**
   * A listing's reviews, page by page, newest or best/worst first.
   * @example
   * for await (const review of client.marketplace.reviews(listingId, { sort: "highest" })) console.log(review.rating);
   */
  reviews(listingId: string, query: QueryOf<"marketplace_reviews"> = {}, options?: RequestOptions): PageIterator<Schemas["ReviewItem"], ResponseOf<"marketplace_reviews">> {
    return list((q) => this.#core.raw.GET("/v1/marketplace/{id}/reviews", { params: { path: { id: listingId }, query: q }, ...init(options) }), query);
  }

  /**
   * Copies the listing's persona into your private personas; a PlanLimitError when your plan is full.
   * @example
   * const { data } = await client.marketplace.use(listingId);
   */
  use(listingId: string, options?: RequestOptions): APIPromise<ResponseOf<"marketplace_use">> {
    return unwrap(this.#core.raw.POST("/v1/marketplace/{id}/use", { params: { path: { id: listingId } }, ...init(options) }));
  }
}
