import type { components } from "../../../generated/openapi.d.ts";
import { shownLink, type Where } from "../../toolkit/links.ts";
import type { PersonaRow } from "../personas/index.ts";
import type { ListingRow, ListingView, RatingRow } from "./store.ts";

type S = components["schemas"];

/** The listing's one-line pitch: the first sentence of the persona's description, at most 140 characters. */
export function tagline(description: string): string {
  const first = description.trim().split(/(?<=[.!?])\s|\n/)[0] ?? "";
  return first.length <= 140 ? first : `${first.slice(0, 139).trimEnd()}…`;
}

/** Average of all ratings, 0 while there are none, to two decimals. */
export function averageRating(row: ListingRow): number {
  return row.review_count === 0 ? 0 : Math.round((row.rating_sum / row.review_count) * 100) / 100;
}

const author = (row: ListingView): S["ListingAuthor"] => ({ id: row.creator_id, display_name: row.author_name, verified: row.author_verified });

/** A listing; `where` makes a stored link absolute (server/toolkit/links.ts). */
export function toListing(row: ListingView, where: Where): S["Listing"] {
  return {
    id: row.id,
    persona_id: row.persona_id,
    name: row.name,
    tagline: tagline(row.description),
    description: row.description,
    category: row.category as S["MarketplaceCategory"],
    tags: row.tags,
    author: author(row),
    rating: averageRating(row),
    review_count: row.review_count,
    use_count: row.use_count,
    avatar_url: shownLink(where, row.avatar_url),
    content_rating: row.content_rating,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export function toListingDetail(row: ListingView, samples: string[], where: Where): S["ListingDetail"] {
  return {
    ...toListing(row, where),
    author: { ...author(row), avatar_url: shownLink(where, row.author_avatar_url) },
    rating_distribution: { "5": row.rating_5, "4": row.rating_4, "3": row.rating_3, "2": row.rating_2, "1": row.rating_1 },
    sample_messages: samples,
  };
}

export function toFeatured({ listing, reason }: { listing: ListingView; reason: string }, where: Where): S["FeaturedListing"] {
  return {
    id: listing.id,
    name: listing.name,
    tagline: tagline(listing.description),
    category: listing.category as S["MarketplaceCategory"],
    author: author(listing),
    rating: averageRating(listing),
    review_count: listing.review_count,
    use_count: listing.use_count,
    avatar_url: shownLink(where, listing.avatar_url),
    featured_reason: reason,
  };
}

export function toRating(row: RatingRow): S["Rating"] {
  return {
    id: row.id,
    listing_id: row.listing_id,
    user_id: row.user_id,
    rating: row.rating,
    review: row.review,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export function toReview(row: RatingRow & { user_name: string }): S["ReviewItem"] {
  return { id: row.id, user: { id: row.user_id, display_name: row.user_name }, rating: row.rating, review: row.review, created_at: row.created_at.toISOString() };
}

export function toCopy(persona: PersonaRow, listingId: string): S["MarketplaceCopy"] {
  return {
    persona_id: persona.id,
    source_listing_id: listingId,
    name: persona.name,
    status: "active",
    message: `${persona.name} was added to your personas. Customize it any time.`,
    created_at: persona.created_at.toISOString(),
  };
}

export function toPublication(row: ListingRow, url: string): S["Publication"] {
  return {
    id: row.id,
    persona_id: row.persona_id,
    status: "published",
    category: row.category as S["PublishCategory"],
    tags: row.tags,
    pricing: row.pricing,
    marketplace_url: url,
    published_at: row.published_at.toISOString(),
  };
}
