import type { components } from "../../../generated/openapi.d.ts";
import { publicBaseUrl } from "../../toolkit/config.ts";
import { notFoundExplained, notImplemented } from "../../toolkit/http/error-catalogue.ts";
import { PERSON_PATHS, personBaseUrl } from "../../toolkit/person-links.ts";
import type { Services } from "../../toolkit/services.ts";
import { CARD_HEIGHT, CARD_WIDTH, type CardInput } from "./card-image.ts";
import { SITE_NAME } from "./document.ts";
import { requireListing } from "../marketplace/index.ts";
import { publicPersona } from "./service.ts";
import { cardImageUrl, cardOf, cardOfListing } from "./share-meta.ts";

type OEmbed = components["schemas"]["OEmbed"];

/** How long a consumer may keep an answer (seconds): a renamed persona shows within the hour. */
export const OEMBED_CACHE_AGE = 3600;

const UUID = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";
const PERSONA_PATH = new RegExp(`^${PERSON_PATHS.persona}/(${UUID})/?$`);
const LISTING_PATH = new RegExp(`^${PERSON_PATHS.listing}/(${UUID})/?$`);

/** What a page URL names: a persona's page or a listing's, on this service's pages or the app's; else undefined. */
export function pageOf(services: Services, url: string): { kind: "persona" | "listing"; id: string } | undefined {
  if (!URL.canParse(url)) return undefined;
  const parsed = new URL(url);
  const bare = `${parsed.origin}${parsed.pathname}`;
  for (const base of new Set([personBaseUrl(services.config), publicBaseUrl(services.config)])) {
    if (!bare.toLowerCase().startsWith(`${base.toLowerCase()}/`)) continue;
    const path = bare.slice(base.length);
    const persona = PERSONA_PATH.exec(path);
    if (persona) return { kind: "persona", id: persona[1]!.toLowerCase() };
    const listing = LISTING_PATH.exec(path);
    if (listing) return { kind: "listing", id: listing[1]!.toLowerCase() };
  }
  return undefined;
}

/**
 * The oEmbed answer for a public persona's page or its listing's (https://oembed.com, 2.3.4): a
 * `link` whose thumbnail is the persona's card. 404 for a URL that names nothing public here; 501
 * for any format but JSON, as the specification asks.
 */
export async function oembedAnswer(services: Services, url: string, format: "json" | "xml"): Promise<OEmbed> {
  if (format !== "json") throw notImplemented("Only format=json is offered");
  const page = pageOf(services, url);
  if (!page) throw notFoundExplained("The url is not the page of a persona or a listing of this service");
  if (page.kind === "persona") {
    const found = await publicPersona(services, page.id);
    return answer(services, cardOf(found.persona, found.creatorName));
  }
  return answer(services, cardOfListing(await requireListing(services, page.id)));
}

function answer(services: Services, card: CardInput): OEmbed {
  return {
    version: "1.0",
    type: "link",
    title: card.name,
    author_name: card.creatorName,
    provider_name: SITE_NAME,
    provider_url: `${personBaseUrl(services.config)}/`,
    cache_age: OEMBED_CACHE_AGE,
    thumbnail_url: cardImageUrl(services.config, card),
    thumbnail_width: CARD_WIDTH,
    thumbnail_height: CARD_HEIGHT,
  };
}
