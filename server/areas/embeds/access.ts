import type { Request } from "express";
import { publicBaseUrl } from "../../toolkit/config.ts";
import { forbidden, notFound, unauthorized } from "../../toolkit/http/error-catalogue.ts";
import { isUuid } from "../../toolkit/http/text.ts";
import type { Services } from "../../toolkit/services.ts";
import { sha256 } from "../../toolkit/tokens.ts";
import { requirePublicPersona, type PersonaRow } from "../personas/index.ts";
import { isLive, settingsOf, type EmbedSettings } from "./settings.ts";
import { findGuest, findSettings, type GuestRow } from "./store.ts";

/**
 * Who may use an embedded persona (docs/adr/0316-embed-origins-frame-ancestors-and-the-origin-check.md).
 * The persona must be embeddable now: enabled, with an allowed origin, public and of a live
 * account; anything else is 404, whatever the reason, as for a private persona. Then the page
 * asking must be on one of its allowed origins: the request's `Origin` when a page calls from its
 * own origin, or, when the embed's own chat page calls (its requests carry the service's origin),
 * the origin of the page it is embedded in, which it sends as `X-Embed-Origin`. The chat page only
 * runs inside a page its `frame-ancestors` lets frame it. The check binds browsers, which cannot
 * lie about `Origin`; a script outside a browser can send anything, which is why the visitors'
 * limits and the daily cap do not depend on it.
 */

/** An embeddable persona with its settings. */
export interface Embeddable {
  persona: PersonaRow;
  settings: EmbedSettings;
}

/** The persona, if it can be embedded now; 404 otherwise (disabled, private, deleted, unknown: alike). */
export async function requireEmbeddable(services: Services, personaId: string): Promise<Embeddable> {
  if (!isUuid(personaId)) throw notFound("Persona");
  const [persona, row] = await Promise.all([requirePublicPersona(services, personaId), findSettings(services.db.knex, personaId)]);
  const settings = settingsOf(row);
  if (!isLive(settings, persona)) throw notFound("Persona");
  return { persona, settings };
}

/** The origins the service itself is reached at: `PUBLIC_BASE_URL`'s, and the one this request names. */
function ownOrigins(services: Services, req: Request): Set<string> {
  const origins = new Set([new URL(publicBaseUrl(services.config)).origin]);
  // Express's `host` honours X-Forwarded-Host only behind a trusted proxy (TRUST_PROXY).
  if (req.host) origins.add(`${req.protocol}://${req.host}`);
  return origins;
}

/** The origin of the page that is using the embed, as far as the request tells it. */
export function embeddingOrigin(services: Services, req: Request): string | undefined {
  const origin = req.get("origin");
  // A same-origin GET carries no Origin; the browser's Sec-Fetch-Site says where it came from.
  const fromChatPage = origin === undefined ? req.get("sec-fetch-site") === "same-origin" : ownOrigins(services, req).has(origin);
  return fromChatPage ? req.get("x-embed-origin") : origin;
}

/** 403 unless the page using the embed is on one of the persona's allowed origins. */
export function requireAllowedOrigin(services: Services, req: Request, embeddable: Embeddable): void {
  const origin = embeddingOrigin(services, req);
  if (origin === undefined || !embeddable.settings.allowedOrigins.includes(origin)) {
    throw forbidden("This chat is not available on this site: its origin is not one the persona's owner allows");
  }
}

/** What a guest operation acts for: the embeddable persona and the visitor. */
export interface GuestAccess extends Embeddable {
  guest: GuestRow;
}

/** A guest token: `eg_` and 43 URL-safe characters (256 random bits). */
export const GUEST_TOKEN = /^eg_[A-Za-z0-9_-]{43}$/;

/**
 * The checks of every guest operation but the first, in order: the persona is embeddable (404),
 * the page is on an allowed origin (403), and `X-Embed-Guest` is a visitor token of this very
 * persona (401). A token is nothing else anywhere: the credential middleware never reads this
 * header, so every other operation sees a caller without credentials.
 */
export async function requireGuest(services: Services, req: Request, personaId: string, token: string | undefined): Promise<GuestAccess> {
  const embeddable = await requireEmbeddable(services, personaId);
  requireAllowedOrigin(services, req, embeddable);
  const guest = token !== undefined && GUEST_TOKEN.test(token) ? await findGuest(services.db.knex, embeddable.persona.id, sha256(token), services.now()) : undefined;
  if (!guest) throw unauthorized("The visitor's token is missing, expired, or not one of this persona's");
  return { ...embeddable, guest };
}
