import type { components } from "../../../generated/openapi.d.ts";
import type { Services } from "../../toolkit/services.ts";
import { getUser } from "../auth/index.ts";
import { conversationCount } from "../conversations/index.ts";
import { requireListing, reviews, sampleMessages, toListingDetail, toReview, visibleListingOfPersona, type ListingView } from "../marketplace/index.ts";
import { requirePublicPersona, type PersonaRow } from "../personas/index.ts";
import { fillMacros } from "../replies/index.ts";
import { likeCount } from "../social/index.ts";

// What the public pages show, gathered from the areas that own it. Nothing here is the caller's:
// the pages have no session, so they show what anyone may see, and 404 for anything else.

type S = components["schemas"];

/**
 * Whom `{{user}}` names on a page read by nobody in particular (a greeting, a sample message): the
 * reader, as "you" (docs/adr/0285-card-macros-are-filled-when-a-reply-is-built-stored-text-keeps-them.md).
 */
export const VISITOR_NAME = "you";

/** A card text as a visitor reads it: `{{char}}` the persona's name, `{{user}}` "you". */
export function shownToVisitor(text: string, personaName: string): string {
  return fillMacros(text, { char: personaName, user: VISITOR_NAME });
}

/** A public persona with what its page shows beside it. */
export interface PublicPersona {
  persona: PersonaRow;
  /** The creator's display name, else username. */
  creatorName: string;
  likes: number;
  conversations: number;
  /** The greeting with its macros filled, or null while it has none. */
  greeting: string | null;
  /** Its marketplace listing, when it has one anyone may see. */
  listing: ListingView | undefined;
}

/** A public persona of a live account, else 404 (private, deleted, unknown: alike). */
export async function publicPersona(services: Services, personaId: string): Promise<PublicPersona> {
  const persona = await requirePublicPersona(services, personaId);
  const [creator, likes, conversations, listing] = await Promise.all([
    getUser(services, persona.creator_id),
    likeCount(services, persona.id),
    conversationCount(services, persona.id),
    visibleListingOfPersona(services, persona.id),
  ]);
  return {
    persona,
    creatorName: creator.display_name?.trim() || creator.username,
    likes,
    conversations,
    greeting: persona.greeting_message === null ? null : shownToVisitor(persona.greeting_message, persona.name),
    listing,
  };
}

/** Reviews a listing's page shows, newest first. */
export const LISTING_PAGE_REVIEWS = 10;

/** A listing as its page shows it: the API's detail view, its latest reviews, its samples with macros filled. */
export interface PublicListing {
  listing: ListingView;
  detail: S["ListingDetail"];
  reviews: S["ReviewItem"][];
  /** Every review the listing has (the page shows the latest `LISTING_PAGE_REVIEWS`). */
  reviewTotal: number;
  samples: string[];
}

/** A listing anyone may see, else 404. */
export async function publicListing(services: Services, listingId: string): Promise<PublicListing> {
  const listing = await requireListing(services, listingId);
  const [samples, page] = await Promise.all([sampleMessages(services, listing), reviews(services, listing.id, "recent", { limit: LISTING_PAGE_REVIEWS, offset: 0 })]);
  // The samples are stored as the card wrote them; a reader sees them filled.
  const shown = samples.map((text) => shownToVisitor(text, listing.name));
  return { listing, detail: toListingDetail(listing, shown, services.config), reviews: page.rows.map(toReview), reviewTotal: page.total, samples: shown };
}

/** What a public persona's card draws (no counts: the card changes only when the persona does). */
export async function personaCard(services: Services, personaId: string): Promise<{ persona: PersonaRow; creatorName: string }> {
  const persona = await requirePublicPersona(services, personaId);
  const creator = await getUser(services, persona.creator_id);
  return { persona, creatorName: creator.display_name?.trim() || creator.username };
}
