import type { Request } from "express";
import { v7 as uuidv7 } from "uuid";
import type { Services } from "../../toolkit/services.ts";
import { randomToken, sha256 } from "../../toolkit/tokens.ts";
import { requireAllowedOrigin, requireEmbeddable } from "./access.ts";
import { countNewVisitor } from "./limits.ts";
import { deleteGuestsUnseenSince, insertGuest } from "./store.ts";

/**
 * An embedded persona's anonymous visitors (docs/adr/0315-guest-identities-and-what-their-token-can-do.md).
 * A visitor is a random token the embed's chat page keeps in its own storage (partitioned by the
 * embedding site in today's browsers; no cookie, third-party or other). The service keeps only its
 * SHA-256, bound to one persona. The token is no credential of the API: it chats with that persona
 * through the guest operations and does nothing else.
 */

/** How long a visitor unseen stays known; its conversation stays the owner's after it. */
export const GUEST_IDLE_DAYS = 90;

export interface NewGuest {
  token: string;
  guestId: string;
  personaId: string;
}

/** A new visitor of an embeddable persona, from a page on an allowed origin, within the address's allowance. */
export async function createGuest(services: Services, req: Request, personaId: string): Promise<NewGuest> {
  const embeddable = await requireEmbeddable(services, personaId);
  requireAllowedOrigin(services, req, embeddable);
  await countNewVisitor(services, req);
  const token = `eg_${randomToken(32)}`;
  const now = services.now();
  const id = uuidv7();
  await insertGuest(services.db.knex, { id, persona_id: embeddable.persona.id, token_hash: sha256(token), created_at: now, last_seen_at: now });
  return { token, guestId: id, personaId: embeddable.persona.id };
}

/** Forgets the visitors unseen for `GUEST_IDLE_DAYS`: their tokens stop working, their conversations stay. */
export async function forgetIdleGuests(services: Services): Promise<number> {
  const before = new Date(services.now().getTime() - GUEST_IDLE_DAYS * 24 * 60 * 60 * 1000);
  return deleteGuestsUnseenSince(services.db.knex, before);
}
