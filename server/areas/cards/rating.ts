import type { ContentRating } from "../personas/index.ts";

// Content ratings in character cards (issue 41): V2 and V3 cards have no rating field; the card
// ecosystems mark adult characters with tags (`NSFW` on the card sites, `18+`, `adult`, ...). A card
// carrying one imports as `mature`; a `mature` persona exports with the `NSFW` tag, so that a
// round trip keeps its rating.

const MATURE_TAGS = new Set(["nsfw", "nsfl", "18+", "adult", "adults only", "explicit", "mature", "r18", "r-18", "lewd"]);

/** The tag a `mature` persona's card carries when its own tags have none. */
export const MATURE_TAG = "NSFW";

const normal = (tag: string) => tag.trim().toLowerCase().replace(/\s+/g, " ");

/** `mature` when any of the card's tags marks adult content. */
export function ratingOfTags(tags: readonly string[]): ContentRating {
  return tags.some((tag) => MATURE_TAGS.has(normal(tag))) ? "mature" : "general";
}

/** The card's tags for a persona of `rating`: a mature one without a marker gains `NSFW`. */
export function tagsForRating(tags: readonly string[], rating: ContentRating): string[] {
  return rating === "mature" && ratingOfTags(tags) !== "mature" ? [...tags, MATURE_TAG] : [...tags];
}
