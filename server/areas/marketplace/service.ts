import type { Knex } from "knex";
import { v7 as uuidv7 } from "uuid";
import type { components } from "../../../generated/openapi.d.ts";
import { planOf } from "../../quota/usage.ts";
import { listingPageLink } from "../../toolkit/person-links.ts";
import { conflict, forbidden, notFound, planLimit } from "../../toolkit/http/error-catalogue.ts";
import type { PageWindow } from "../../toolkit/http/paging.ts";
import { isUuid } from "../../toolkit/http/text.ts";
import { createPersona, ratingsShownTo, requireOwnPersona, requireVisiblePersona, updatePersona, type ContentRating } from "../personas/index.ts";
import { holdForReview, screen } from "../../toolkit/moderation.ts";
import { activeVersionOf } from "../personas/index.ts";
import type { Services } from "../../toolkit/services.ts";
import { SHELVES, shelfOfPersonaCategory, type Shelf } from "./shelves.ts";
import {
  countsByCategory,
  creatorReplies,
  featuredListings,
  findAnyListing,
  findAnyReview,
  setListingTakenDown,
  setReviewTakenDown,
  findVisibleListing,
  findVisibleListingOfPersona,
  incrementUseCount,
  listListings,
  listReviews,
  saveRating,
  setFeatured,
  topRatedListings,
  upsertListing,
  visibleListings,
  type ListingRow,
  type ListingSort,
  type ListingView,
  type ReviewSortKey,
} from "./store.ts";

type PublishInput = components["schemas"]["PublishInput"];

/** How many listings the featured shelf holds. */
export const FEATURED_SIZE = 6;
/** Ratings a listing needs to be picked by the fallback rule when nothing is curated. */
export const FEATURED_FALLBACK_MIN_RATINGS = 3;
/** Sample messages the detail view shows at most. */
export const SAMPLE_MESSAGES = 3;

/** Listings anyone may see: published, the persona still public, the creator's account live. */
function visible(services: Services): Knex.QueryBuilder {
  return visibleListings(services.db.knex);
}

/** The listing's page: `<APP_BASE_URL>/marketplace/<id>`, else the service's own (toolkit/person-links.ts). */
export function listingUrl(services: Services, listingId: string): string {
  return listingPageLink(services.config, listingId);
}

/**
 * Lists the caller's persona, or updates its listing's category, tags and pricing. The persona needs
 * an active version (409 otherwise) and becomes public: a listing shows a public persona. Without a
 * category a new listing goes on the shelf of the persona's own category (shelves.ts) and an
 * existing one keeps its shelf.
 */
export async function publish(services: Services, userId: string, personaId: string, input: PublishInput): Promise<ListingRow> {
  const persona = await requireOwnPersona(services, userId, personaId);
  if (!(await activeVersionOf(services, persona.id))) {
    throw conflict("The persona has no active instruction version to publish; activate one first");
  }
  if (!persona.is_public) await updatePersona(services, userId, persona.id, { is_public: true });
  const now = services.now();
  // Tags compare case-insensitively in search; stored lower-cased, each once.
  const tags = [...new Set(input.tags.map((tag) => tag.trim().toLowerCase()))];
  return upsertListing(services.db.knex, {
    id: uuidv7(),
    persona_id: persona.id,
    creator_id: userId,
    category: input.category ?? shelfOfPersonaCategory(persona.category),
    tags,
    pricing: input.pricing,
    published_at: now,
    created_at: now,
    updated_at: now,
  }, { keepCategory: input.category === undefined });
}

/** Listed listings of the ratings `viewerId` is shown (anonymous: `general` only; personas' ratings.ts). */
export async function list(services: Services, viewerId: string | undefined, filter: { category?: string; q?: string }, sort: ListingSort, page: PageWindow) {
  const q = filter.q?.trim();
  const ratings = await ratingsShownTo(services, viewerId);
  return listListings(services.db.knex, { category: filter.category, q: q ? q : undefined, ratings }, sort, page);
}

export async function requireListing(services: Services, id: string): Promise<ListingView> {
  const row = isUuid(id) ? await findVisibleListing(visible(services), id) : undefined;
  if (!row) throw notFound("Listing");
  return row;
}

/** The persona's listing when anyone may see it (its public page links it), else undefined. */
export async function visibleListingOfPersona(services: Services, personaId: string): Promise<ListingView | undefined> {
  return isUuid(personaId) ? findVisibleListingOfPersona(visible(services), personaId) : undefined;
}

/**
 * Curated listings; when none is curated, the best rated with enough ratings, then the most used;
 * of the ratings `viewerId` is shown.
 */
export async function featured(services: Services, viewerId: string | undefined): Promise<{ listing: ListingView; reason: string }[]> {
  const ratings = await ratingsShownTo(services, viewerId);
  const shown = () => visible(services).whereIn("l.content_rating", ratings);
  const curated = await featuredListings(shown(), FEATURED_SIZE);
  if (curated.length > 0) return curated.map((listing) => ({ listing, reason: listing.featured_reason ?? "" }));
  const rated = await topRatedListings(shown(), FEATURED_FALLBACK_MIN_RATINGS, FEATURED_SIZE);
  if (rated.length > 0) return rated.map((listing) => ({ listing, reason: `Top rated in ${SHELVES[listing.category as Shelf]?.name ?? "the marketplace"}` }));
  const { rows } = await list(services, viewerId, {}, "popular", { limit: FEATURED_SIZE, offset: 0 });
  return rows.map((listing) => ({ listing, reason: "Most used" }));
}

/** Marks a listing featured (an operator's command); false when no such listing exists. */
export async function feature(services: Services, listingId: string, reason: string): Promise<boolean> {
  return isUuid(listingId) && setFeatured(services.db.knex, listingId, reason, services.now());
}

export async function unfeature(services: Services, listingId: string): Promise<boolean> {
  return isUuid(listingId) && setFeatured(services.db.knex, listingId, null, null);
}

/** Every shelf with its name, description and count of the visible listings of the ratings `viewerId` is shown. */
export async function categories(services: Services, viewerId: string | undefined) {
  const counts = await countsByCategory(services.db.knex, await ratingsShownTo(services, viewerId));
  return (Object.entries(SHELVES) as [Shelf, (typeof SHELVES)[Shelf]][]).map(([slug, info]) => ({ slug, ...info, count: counts.get(slug) ?? 0 }));
}

/**
 * Samples: the persona's greeting, then the latest replies it gave in its creator's own
 * conversations (never another user's), up to SAMPLE_MESSAGES
 * (docs/adr/0170-a-listing-s-sample-messages-come-from-its-creator-s-own.md).
 */
export async function sampleMessages(services: Services, listing: ListingView): Promise<string[]> {
  const greeting = listing.greeting_message;
  const replies = await creatorReplies(services.db.knex, listing.persona_id, listing.creator_id, SAMPLE_MESSAGES);
  return [...(greeting ? [greeting] : []), ...replies].slice(0, SAMPLE_MESSAGES);
}

/** One rating per user and listing: the first creates it, later ones replace it. Your own listing is 403. */
export async function rate(services: Services, userId: string, listingId: string, input: { rating: number; review?: string }) {
  const listing = await requireListing(services, listingId);
  if (listing.creator_id === userId) throw forbidden("You cannot rate your own listing");
  // Review text is checked before it is published (issue 41); a held review is saved hidden.
  const flag = await screen(services, { label: "The review", texts: [input.review], holdable: true });
  const now = services.now();
  return services.db.knex.transaction(async (trx) => {
    const saved = await saveRating(trx, listing.id, {
      id: uuidv7(), listing_id: listing.id, user_id: userId, rating: input.rating, review: input.review ?? null, created_at: now, updated_at: now, ...(flag ? { taken_down_at: now } : {}),
    });
    if (flag) await holdForReview(trx, { targetType: "review", targetId: saved.rating.id, ownerId: userId, flag });
    return saved;
  });
}

export async function reviews(services: Services, listingId: string, sort: ReviewSortKey, page: PageWindow) {
  const listing = await requireListing(services, listingId);
  return listReviews(services.db.knex, listing.id, sort, page);
}

/**
 * A private copy of the listing's persona for the caller: its fields and active instructions, not
 * its knowledge; counted against the plan's persona limit (402) and, in the same transaction, in
 * the listing's `use_count`. A premium listing needs a paid plan (402 on the free plan).
 */
export async function use(services: Services, userId: string, listingId: string) {
  const listing = await requireListing(services, listingId);
  const source = await requireVisiblePersona(services, userId, listing.persona_id);
  if (listing.pricing === "premium" && (await planOf(services, userId)) === "free") {
    throw planLimit("This persona is premium: upgrade from the free plan to use it");
  }
  const active = await activeVersionOf(services, listing.persona_id);
  if (!active) throw notFound("Listing");
  return createPersona(
    services,
    userId,
    {
      name: listing.name,
      description: source.description,
      instructions: active.instructions,
      model: source.model,
      avatar_url: source.avatar_url ?? undefined,
      is_public: false,
      category: source.category as never,
      greeting_message: source.greeting_message ?? undefined,
      voice_id: source.voice_id as never,
    },
    { sourceListingId: listing.id, onCreated: (trx) => incrementUseCount(trx, listing.id) },
  );
}

// ---------------------------------------------------------------- trust and safety (issue 41)

/** Any listing by id, whatever its state (the safety area's snapshots); undefined when none. */
export async function findListingForModeration(services: Services, listingId: string): Promise<ListingView | undefined> {
  return isUuid(listingId) ? findAnyListing(services.db.knex, listingId) : undefined;
}

/** Takes a listing off the marketplace (`at`) or puts it back (null); false when none. */
export async function setListingTakedown(services: Services, listingId: string, at: Date | null): Promise<boolean> {
  return isUuid(listingId) && setListingTakenDown(services.db.knex, listingId, at);
}

/** A review by id whatever its state, with its listing's creator; undefined when none. */
export async function findReviewForModeration(services: Services, reviewId: string) {
  return isUuid(reviewId) ? findAnyReview(services.db.knex, reviewId) : undefined;
}

/** Hides a review from its listing's reviews (`at`) or shows it again (null); false when none. */
export async function setReviewTakedown(services: Services, reviewId: string, at: Date | null): Promise<boolean> {
  return isUuid(reviewId) && setReviewTakenDown(services.db.knex, reviewId, at);
}

export type { ContentRating };
