import type { Knex } from "knex";
import { offsetPage } from "../../toolkit/db/paging.ts";
import type { PageWindow } from "../../toolkit/http/paging.ts";
import type { ContentRating } from "../personas/index.ts";

export interface ListingRow {
  id: string;
  persona_id: string;
  creator_id: string;
  category: string;
  tags: string[];
  pricing: "free" | "premium";
  use_count: number;
  review_count: number;
  rating_sum: number;
  rating_1: number;
  rating_2: number;
  rating_3: number;
  rating_4: number;
  rating_5: number;
  featured_reason: string | null;
  featured_at: Date | null;
  published_at: Date;
  created_at: Date;
  updated_at: Date;
  /** Its persona's rating, copied by a trigger (migration 0034). */
  content_rating: ContentRating;
}

/** A listing with what the marketplace shows of its persona and creator. */
export interface ListingView extends ListingRow {
  name: string;
  description: string;
  avatar_url: string | null;
  greeting_message: string | null;
  author_name: string;
  author_verified: boolean;
  author_avatar_url: string | null;
}

export interface RatingRow {
  id: string;
  listing_id: string;
  user_id: string;
  rating: number;
  review: string | null;
  created_at: Date;
  updated_at: Date;
  /** When the review was taken down or held for review (issue 41): left out of the reviews shown. */
  taken_down_at?: Date | null;
}

// The listing's own columns; the search copies and `listed` (migration 0014) stay in the database.
const LISTING_COLUMNS = [
  "id", "persona_id", "creator_id", "category", "tags", "pricing", "use_count", "review_count", "rating_sum",
  "rating_1", "rating_2", "rating_3", "rating_4", "rating_5", "featured_reason", "featured_at", "published_at", "created_at", "updated_at",
  "content_rating",
] as const;

export type ListingSort = "popular" | "recent" | "trending" | "top_rated";
export type ReviewSortKey = "recent" | "highest" | "lowest";

export async function findListingOfPersona(knex: Knex, personaId: string): Promise<ListingRow | undefined> {
  return knex("marketplace_listings").where({ persona_id: personaId }).first([...LISTING_COLUMNS]);
}

/**
 * Creates the persona's listing or updates its category, tags and pricing; one row per persona.
 * With `keepCategory` an existing listing keeps its category (`row.category` files a new one).
 */
export async function upsertListing(
  knex: Knex,
  row: Pick<ListingRow, "id" | "persona_id" | "creator_id" | "category" | "tags" | "pricing" | "published_at" | "created_at" | "updated_at">,
  options: { keepCategory?: boolean } = {},
): Promise<ListingRow> {
  const [saved] = await knex("marketplace_listings")
    .insert(row)
    .onConflict("persona_id")
    .merge([...(options.keepCategory ? [] : ["category"]), "tags", "pricing", "updated_at"])
    .returning([...LISTING_COLUMNS]);
  return saved as ListingRow;
}

/**
 * Listings anyone may see, over `marketplace_listings as l` joined to `personas as p` and
 * `users as u`: `listed`, which triggers keep equal to "the persona is public and not taken down,
 * its creator's account live (neither deleted nor suspended), the listing not taken down"
 * (migrations 0014 and 0034, `marketplace_listed`), the rule of every public place
 * (server/areas/personas/shown.ts, byLiveCreator).
 */
export function visibleListings(knex: Knex): Knex.QueryBuilder {
  return withShownFields(knex, knex("marketplace_listings as l").where("l.listed", true));
}

function withShownFields(knex: Knex, listings: Knex.QueryBuilder): Knex.QueryBuilder {
  return listings
    .join("personas as p", "p.id", "l.persona_id")
    .join("users as u", "u.id", "l.creator_id")
    .select(
      ...LISTING_COLUMNS.map((column) => `l.${column}`),
      "p.name",
      "p.description",
      "p.avatar_url",
      "p.greeting_message",
      knex.raw("coalesce(u.display_name, u.username) as author_name"),
      "u.email_verified as author_verified",
      "u.avatar_url as author_avatar_url",
    );
}

const AVERAGE = "(l.rating_sum::float8 / nullif(l.review_count, 0))";
const LISTING_ORDER: Record<ListingSort, string> = {
  popular: "l.use_count DESC, l.published_at DESC, l.id DESC",
  recent: "l.published_at DESC, l.id DESC",
  top_rated: `coalesce(${AVERAGE}, 0) DESC, l.review_count DESC, l.published_at DESC, l.id DESC`,
  // The persona's stored trending score (server/areas/personas/trending.ts), read from the listing's
  // narrow trending row whose index is this order.
  trending: "t.score DESC, t.published_at DESC, t.listing_id DESC",
};

/**
 * Listed listings of the filter, over `marketplace_listings as l`. `q` is one match of the
 * listing's tsvector of name, description and tags (web-search syntax, English stemming) in
 * `marketplace_search as s`, against its GIN index.
 */
function matchingListings(knex: Knex, filter: ListingFilter): Knex.QueryBuilder {
  const query = knex("marketplace_listings as l").where("l.listed", true).whereIn("l.content_rating", filter.ratings);
  if (filter.category) query.where("l.category", filter.category);
  if (filter.q !== undefined) query.join("marketplace_search as s", "s.listing_id", "l.id").whereRaw("s.document @@ websearch_to_tsquery('english', ?)", [filter.q]);
  return query;
}

/** What a list is filtered by: the shelf, free text, and the ratings its viewer is shown. */
export interface ListingFilter {
  category?: string;
  q?: string;
  ratings: readonly ContentRating[];
}

/** How many listed listings match `q` (and the category and ratings): the narrow search table alone. */
async function countMatches(knex: Knex, q: string, ratings: readonly ContentRating[], category?: string): Promise<number> {
  const query = knex("marketplace_search as s").where("s.listed", true).whereIn("s.content_rating", ratings).whereRaw("s.document @@ websearch_to_tsquery('english', ?)", [q]);
  if (category) query.where("s.category", category);
  const [row] = await query.count<{ count: string | number }[]>({ count: "*" });
  return Number(row?.count ?? 0);
}

/** Listed listings of one category or all, of these ratings, from the counters triggers keep (migrations 0014, 0034). */
async function countListed(knex: Knex, ratings: readonly ContentRating[], category?: string): Promise<number> {
  const query = knex("marketplace_category_counts").whereIn("content_rating", ratings);
  if (category) query.where({ category });
  const row = await query.sum<{ total: string | number | null }[]>({ total: "listings" });
  return Number(row[0]?.total ?? 0);
}

/** One page in `sort` and the number of matches: the counters without `q`, the search table with it. */
export async function listListings(knex: Knex, filter: ListingFilter, sort: ListingSort, page: PageWindow): Promise<{ rows: ListingView[]; total: number }> {
  const listings = matchingListings(knex, filter);
  if (sort === "trending") listings.join("marketplace_trending as t", "t.listing_id", "l.id");
  const [rows, total] = await Promise.all([
    withShownFields(knex, listings).orderByRaw(LISTING_ORDER[sort]).limit(page.limit).offset(page.offset) as Promise<ListingView[]>,
    filter.q === undefined ? countListed(knex, filter.ratings, filter.category) : countMatches(knex, filter.q, filter.ratings, filter.category),
  ]);
  return { rows, total };
}

export async function findVisibleListing(base: Knex.QueryBuilder, id: string): Promise<ListingView | undefined> {
  return base.clone().where("l.id", id).first();
}

/** The persona's listing when anyone may see it (one listing per persona). */
export async function findVisibleListingOfPersona(base: Knex.QueryBuilder, personaId: string): Promise<ListingView | undefined> {
  return base.clone().where("l.persona_id", personaId).first();
}

/** Curated listings first, most recently featured first. */
export async function featuredListings(base: Knex.QueryBuilder, limit: number): Promise<ListingView[]> {
  return base.clone().whereNotNull("l.featured_at").orderByRaw("l.featured_at DESC, l.id DESC").limit(limit);
}

export async function topRatedListings(base: Knex.QueryBuilder, minRatings: number, limit: number): Promise<ListingView[]> {
  return base.clone().where("l.review_count", ">=", minRatings).orderByRaw(LISTING_ORDER.top_rated).limit(limit);
}

export async function countsByCategory(knex: Knex, ratings: readonly ContentRating[]): Promise<Map<string, number>> {
  const rows: { category: string; listings: number }[] = await knex("marketplace_category_counts").whereIn("content_rating", ratings).groupBy("category").select("category").sum({ listings: "listings" });
  return new Map(rows.map((row) => [row.category, Number(row.listings)]));
}

export async function setFeatured(knex: Knex, id: string, reason: string | null, at: Date | null): Promise<boolean> {
  return (await knex("marketplace_listings").where({ id }).update({ featured_reason: reason, featured_at: at })) > 0;
}

/**
 * Replaces or creates the user's rating of a listing and moves the listing's counters by the
 * difference, in one transaction under the listing's row lock, so concurrent raters never lose an
 * update. `created` tells a first rating from a replacement.
 */
export async function saveRating(
  trx: Knex.Transaction,
  listingId: string,
  row: RatingRow,
): Promise<{ rating: RatingRow; created: boolean }> {
  await trx("marketplace_listings").where({ id: listingId }).forUpdate().first("id");
  const previous: RatingRow | undefined = await trx("ratings").where({ listing_id: listingId, user_id: row.user_id }).first();
  const counters: Record<string, Knex.Raw> = {};
  const bump = (column: string, by: number) => {
    counters[column] = trx.raw("?? + ?", [column, by]);
  };
  let saved: RatingRow;
  if (previous) {
    // A review held for review stays held when it is replaced; a replacement held now is hidden.
    const held = row.taken_down_at ? { taken_down_at: row.taken_down_at } : {};
    [saved] = await trx("ratings").where({ id: previous.id }).update({ rating: row.rating, review: row.review, updated_at: row.updated_at, ...held }).returning("*");
    bump("rating_sum", row.rating - previous.rating);
    if (previous.rating !== row.rating) {
      bump(`rating_${previous.rating}`, -1);
      bump(`rating_${row.rating}`, 1);
    }
  } else {
    [saved] = await trx("ratings").insert(row).returning("*");
    bump("rating_sum", row.rating);
    bump("review_count", 1);
    bump(`rating_${row.rating}`, 1);
  }
  await trx("marketplace_listings").where({ id: listingId }).update(counters);
  return { rating: saved, created: !previous };
}

const REVIEW_ORDER: Record<ReviewSortKey, string> = {
  recent: "r.created_at DESC, r.id DESC",
  highest: "r.rating DESC, r.created_at DESC, r.id DESC",
  lowest: "r.rating ASC, r.created_at DESC, r.id DESC",
};

export async function listReviews(knex: Knex, listingId: string, sort: ReviewSortKey, page: PageWindow) {
  // A review taken down (or held for review), or by a suspended account, is not shown (issue 41).
  const query = knex("ratings as r")
    .join("users as u", "u.id", "r.user_id")
    .where("r.listing_id", listingId)
    .whereNull("r.taken_down_at")
    .whereNull("u.suspended_at")
    .select("r.*", knex.raw("coalesce(u.display_name, u.username) as user_name"));
  return offsetPage<RatingRow & { user_name: string }>(query, REVIEW_ORDER[sort], page);
}

export async function incrementUseCount(knex: Knex, id: string): Promise<void> {
  await knex("marketplace_listings").where({ id }).increment("use_count", 1);
}

/** Up to `limit` replies the creator's own conversations with the persona got, newest first (greetings, at depth 0, are no replies). */
export async function creatorReplies(knex: Knex, personaId: string, creatorId: string, limit: number): Promise<string[]> {
  const rows: { content: string }[] = await knex("messages")
    .where({ persona_id: personaId, user_id: creatorId, role: "assistant" })
    .where("depth", ">", 0)
    .orderBy([{ column: "created_at", order: "desc" }, { column: "id", order: "desc" }])
    .limit(limit)
    .select("content");
  return rows.map((row) => row.content);
}

// ---------------------------------------------------------------- trust and safety (issue 41)

/** Any listing with its persona's name and description, whatever its state (the safety area's snapshots). */
export async function findAnyListing(knex: Knex, id: string): Promise<ListingView | undefined> {
  return withShownFields(knex, knex("marketplace_listings as l")).where("l.id", id).first();
}

/** Takes the listing down (`at`) or puts it back (null); `listed` follows by trigger (migration 0034). */
export async function setListingTakenDown(knex: Knex, id: string, at: Date | null): Promise<boolean> {
  return (await knex("marketplace_listings").where({ id }).update({ taken_down_at: at })) > 0;
}

/** A review (a rating with its text) by id, whatever its state, with its listing's creator. */
export async function findAnyReview(knex: Knex, id: string): Promise<(RatingRow & { listing_creator_id: string }) | undefined> {
  return knex("ratings as r").join("marketplace_listings as l", "l.id", "r.listing_id").where("r.id", id).first("r.*", "l.creator_id as listing_creator_id");
}

/** Takes the review down (`at`) or puts it back (null). */
export async function setReviewTakenDown(knex: Knex, id: string, at: Date | null): Promise<boolean> {
  return (await knex("ratings").where({ id }).update({ taken_down_at: at })) > 0;
}
