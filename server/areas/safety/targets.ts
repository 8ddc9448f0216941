import { findAccountById, setProfileTakedown } from "../auth/index.ts";
import { findOwnMessage } from "../conversations/index.ts";
import { findListingForModeration, findReviewForModeration, requireListing, setListingTakedown, setReviewTakedown } from "../marketplace/index.ts";
import { findAnyPersona, requireVisiblePersona, setPersonaTakedown, type PersonaRow } from "../personas/index.ts";
import { findRoomMessageForModeration, setRoomMessageTakedown, visibleRoomMessage } from "../rooms/index.ts";
import { ApiError } from "../../toolkit/http/errors.ts";
import type { Services } from "../../toolkit/services.ts";
import type { ActionTargetType, ReportTargetType } from "./store.ts";

// What can be reported, and what an action acts on: each kind of content is reached through the
// index.ts of the area that owns it. The snapshot is what the content shows when it is reported
// (or held), kept with the report so that a later edit cannot hide it from the operator.

/** A reportable target as its reporter sees it. */
export interface ResolvedTarget {
  ownerId: string;
  snapshot: Record<string, unknown>;
  /** What a takedown acts on: the target itself, or, for a conversation message, the persona whose reply it is. */
  actsOn: { type: ActionTargetType; id: string };
}

/** A 404 of the owning area (a persona or listing the caller may not see) means: not reportable. */
async function unlessHidden<T>(lookup: Promise<T>): Promise<T | undefined> {
  try {
    return await lookup;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return undefined;
    throw error;
  }
}

const personaSnapshot = (persona: PersonaRow) => ({
  name: persona.name,
  handle: persona.handle,
  description: persona.description,
  instructions: persona.instructions,
  greeting_message: persona.greeting_message,
  avatar_url: persona.avatar_url,
  is_public: persona.is_public,
  content_rating: persona.content_rating,
});

/** The owner of a room or conversation message: its sender, or the creator of the persona that wrote it. */
async function ownerOfMessage(services: Services, message: { user_id: string | null; persona_id: string | null }): Promise<string | undefined> {
  if (message.user_id) return message.user_id;
  return message.persona_id ? (await findAnyPersona(services, message.persona_id))?.creator_id : undefined;
}

/**
 * The target as `reporterId` sees it, or undefined when they cannot see it (404 for the report):
 * a persona they may see, a listed listing, a shown review of one, a live profile, a room message
 * of a room they may read, a reply of a persona in their own conversation.
 */
export async function reportableTarget(services: Services, reporterId: string, type: ReportTargetType, id: string): Promise<ResolvedTarget | undefined> {
  switch (type) {
    case "persona": {
      const persona = await unlessHidden(requireVisiblePersona(services, reporterId, id));
      return persona && { ownerId: persona.creator_id, snapshot: personaSnapshot(persona), actsOn: { type, id: persona.id } };
    }
    case "listing": {
      const listing = await unlessHidden(requireListing(services, id));
      return listing && {
        ownerId: listing.creator_id,
        snapshot: { persona_id: listing.persona_id, name: listing.name, description: listing.description, category: listing.category, tags: listing.tags },
        actsOn: { type, id: listing.id },
      };
    }
    case "review": {
      const review = await findReviewForModeration(services, id);
      if (!review || review.taken_down_at || !(await unlessHidden(requireListing(services, review.listing_id)))) return undefined;
      return { ownerId: review.user_id, snapshot: { listing_id: review.listing_id, rating: review.rating, review: review.review }, actsOn: { type, id: review.id } };
    }
    case "profile": {
      const user = await findAccountById(services, id);
      if (!user || user.deleted_at || user.suspended_at || user.profile_taken_down_at) return undefined;
      return { ownerId: user.id, snapshot: { username: user.username, display_name: user.display_name, bio: user.bio, avatar_url: user.avatar_url }, actsOn: { type, id: user.id } };
    }
    case "room_message": {
      const message = await visibleRoomMessage(services, reporterId, id);
      const ownerId = message && (await ownerOfMessage(services, message));
      if (!message || !ownerId) return undefined;
      return {
        ownerId,
        snapshot: { room_id: message.room_id, sender_type: message.sender_type, sender_name: message.sender_name, persona_id: message.persona_id, content: message.content },
        actsOn: { type, id: message.id },
      };
    }
    case "conversation_message": {
      // A reply of a persona in the reporter's own conversation: what the persona said to them.
      const message = await findOwnMessage(services, reporterId, id);
      if (!message || message.role !== "assistant") return undefined;
      const persona = await findAnyPersona(services, message.persona_id);
      if (!persona) return undefined;
      return {
        ownerId: persona.creator_id,
        snapshot: { conversation_id: message.conversation_id, persona_id: persona.id, content: message.content, persona: personaSnapshot(persona) },
        actsOn: { type: "persona", id: persona.id },
      };
    }
  }
}

/** What the target is now, whatever its state, for the operator's review; undefined once it is gone. */
export async function currentState(services: Services, target: { type: ActionTargetType; id: string }): Promise<Record<string, unknown> | undefined> {
  switch (target.type) {
    case "persona": {
      const persona = await findAnyPersona(services, target.id);
      return persona && { ...personaSnapshot(persona), creator_id: persona.creator_id, taken_down_at: persona.taken_down_at ?? null };
    }
    case "listing": {
      const listing = await findListingForModeration(services, target.id);
      return listing && { persona_id: listing.persona_id, name: listing.name, description: listing.description, category: listing.category, tags: listing.tags, content_rating: listing.content_rating };
    }
    case "review": {
      const review = await findReviewForModeration(services, target.id);
      return review && { listing_id: review.listing_id, rating: review.rating, review: review.review, taken_down_at: review.taken_down_at ?? null };
    }
    case "profile":
    case "account": {
      const user = await findAccountById(services, target.id);
      return user && {
        username: user.username,
        display_name: user.display_name,
        bio: user.bio,
        avatar_url: user.avatar_url,
        deleted_at: user.deleted_at,
        suspended_at: user.suspended_at ?? null,
        profile_taken_down_at: user.profile_taken_down_at ?? null,
      };
    }
    case "room_message": {
      const message = await findRoomMessageForModeration(services, target.id);
      return message && { room_id: message.room_id, sender_type: message.sender_type, sender_name: message.sender_name, content: message.content, taken_down_at: message.taken_down_at ?? null };
    }
  }
}

/** The owner of an action's target as it is now (for an operator's takedown of a report-less target). */
export async function ownerOf(services: Services, target: { type: ActionTargetType; id: string }): Promise<string | undefined> {
  switch (target.type) {
    case "persona":
      return (await findAnyPersona(services, target.id))?.creator_id;
    case "listing":
      return (await findListingForModeration(services, target.id))?.creator_id;
    case "review":
      return (await findReviewForModeration(services, target.id))?.user_id;
    case "profile":
    case "account":
      return (await findAccountById(services, target.id))?.id;
    case "room_message": {
      const message = await findRoomMessageForModeration(services, target.id);
      return message && ownerOfMessage(services, message);
    }
  }
}

/**
 * Takes the target down from every public place (`at`) or puts it back (null): the column every
 * public query of its area reads (the personas' one rule, the marketplace's `listed`, a review,
 * a profile, a room message). False when it no longer exists.
 */
export async function applyTakedown(services: Services, target: { type: ActionTargetType; id: string }, at: Date | null): Promise<boolean> {
  switch (target.type) {
    case "persona":
      return setPersonaTakedown(services, target.id, at);
    case "listing":
      return setListingTakedown(services, target.id, at);
    case "review":
      return setReviewTakedown(services, target.id, at);
    case "profile":
      return setProfileTakedown(services, target.id, at);
    case "room_message":
      return setRoomMessageTakedown(services, target.id, at);
    case "account":
      return false;
  }
}
