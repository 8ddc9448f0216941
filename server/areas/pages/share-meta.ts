import { publicBaseUrl, type Config } from "../../toolkit/config.ts";
import { PERSON_PATHS } from "../../toolkit/person-links.ts";
import { tagline, type ListingView } from "../marketplace/index.ts";
import type { PersonaRow } from "../personas/index.ts";
import { CARD_HEIGHT, CARD_WIDTH, cardVersion, type CardInput } from "./card-image.ts";
import { SITE_NAME } from "./document.ts";
import { html, type Html } from "./html.ts";

/**
 * What makes a shared link unfurl as a card: Open Graph (Discord, Slack, Facebook, Mastodon,
 * forums), Twitter's card tags, and oEmbed discovery. The image and the oEmbed endpoint are API
 * links (`PUBLIC_BASE_URL`: an unfurler fetches them from the service); `og:url` is the page's
 * person-facing link (`APP_BASE_URL` when set). Every value is escaped by `html`.
 * docs/adr/0314-share-cards-open-graph-oembed-and-a-card-image.md.
 */

export interface ShareMeta {
  title: string;
  description: string;
  /** The canonical, person-facing link of the page. */
  pageUrl: string;
  card: CardInput;
}

/** What a persona's card draws. */
export function cardOf(persona: PersonaRow, creatorName: string): CardInput {
  return { personaId: persona.id, name: persona.name, tagline: tagline(persona.description), creatorName, avatarUrl: persona.avatar_url };
}

/** What a listing's card draws: its persona's card. */
export function cardOfListing(listing: ListingView): CardInput {
  return { personaId: listing.persona_id, name: listing.name, tagline: tagline(listing.description), creatorName: listing.author_name, avatarUrl: listing.avatar_url };
}

/** The card image's absolute link, versioned: a changed persona is a new URL for caches that key on it. */
export function cardImageUrl(config: Config, card: CardInput): string {
  return `${publicBaseUrl(config)}${cardPath(card.personaId)}?v=${cardVersion(card)}`;
}

/** The card image's path on this service. */
function cardPath(personaId: string): string {
  return `${PERSON_PATHS.persona}/${encodeURIComponent(personaId)}/card.png`;
}

/** The oEmbed endpoint's link for a page. */
export function oembedUrl(config: Config, pageUrl: string): string {
  return `${publicBaseUrl(config)}/oembed?${new URLSearchParams({ url: pageUrl, format: "json" })}`;
}

/** At most `max` characters, cut at a word with an ellipsis: what previews show of a description. */
export function summary(text: string, max = 200): string {
  const flat = text.replace(/\s+/g, " ").trim();
  if ([...flat].length <= max) return flat;
  const cut = [...flat].slice(0, max - 1).join("");
  return `${cut.slice(0, Math.max(cut.lastIndexOf(" "), max / 2)).trimEnd()}…`;
}

/** The `<head>` elements of a shareable page. */
export function shareMetaTags(config: Config, meta: ShareMeta): Html {
  const image = cardImageUrl(config, meta.card);
  const alt = `${meta.card.name}, a persona by ${meta.card.creatorName}`;
  return html`<meta name="description" content="${meta.description}">
<link rel="canonical" href="${meta.pageUrl}">
<meta property="og:type" content="website">
<meta property="og:site_name" content="${SITE_NAME}">
<meta property="og:title" content="${meta.title}">
<meta property="og:description" content="${meta.description}">
<meta property="og:url" content="${meta.pageUrl}">
<meta property="og:image" content="${image}">
<meta property="og:image:type" content="image/png">
<meta property="og:image:width" content="${CARD_WIDTH}">
<meta property="og:image:height" content="${CARD_HEIGHT}">
<meta property="og:image:alt" content="${alt}">
<meta name="twitter:card" content="summary_large_image">
<meta name="twitter:title" content="${meta.title}">
<meta name="twitter:description" content="${meta.description}">
<meta name="twitter:image" content="${image}">
<meta name="twitter:image:alt" content="${alt}">
<link rel="alternate" type="application/json+oembed" href="${oembedUrl(config, meta.pageUrl)}" title="${meta.title}">`;
}
