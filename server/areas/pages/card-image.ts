import { fileURLToPath } from "node:url";
import { renderAsync } from "@resvg/resvg-js";
import { LRUCache } from "lru-cache";
import type { Services } from "../../toolkit/services.ts";
import { FILES_PATH, imageFile } from "../images/index.ts";
import { CARD_WIDTH, cardSvg, cardVersion, type CardInput } from "./card-drawing.ts";

const CARD_FONTS = ["DejaVuSans.ttf", "DejaVuSans-Bold.ttf"].map((file) => fileURLToPath(import.meta.resolve(`dejavu-fonts-ttf/ttf/${file}`)));

export { CARD_HEIGHT, CARD_WIDTH, cardVersion, type CardInput } from "./card-drawing.ts";

/**
 * A persona's share card: the 1200×630 PNG that Open Graph and Twitter cards show (and oEmbed's
 * thumbnail), with the avatar, the name, the tagline and the creator, drawn as SVG and rendered by
 * resvg on the thread pool. Its version is a digest of everything drawn, so it changes exactly
 * when the persona (or its creator's name) does: it is the ETag, and the `?v=` of the image link
 * the pages give, so unfurlers that cache images by URL fetch the new card. Rendered cards are kept
 * per process by version (`CARD_CACHE_ENTRIES`, about 100 KB each); a miss renders once however
 * many ask at the same time. docs/adr/0314-share-cards-open-graph-oembed-and-a-card-image.md.
 */

/** Cards kept rendered per process. */
export const CARD_CACHE_ENTRIES = 128;

const rendered = new LRUCache<string, Promise<Uint8Array>>({ max: CARD_CACHE_ENTRIES });

/** The card as PNG bytes, from this process's cache or rendered now. */
export function cardImage(services: Services, card: CardInput): Promise<Uint8Array> {
  const version = cardVersion(card);
  let png = rendered.get(version);
  if (!png) {
    png = renderCard(services, card);
    // A failed render is not kept: the next request tries again.
    png.catch(() => rendered.delete(version));
    rendered.set(version, png);
  }
  return png;
}

async function renderCard(services: Services, card: CardInput): Promise<Uint8Array> {
  const avatar = await avatarPng(services, card.avatarUrl);
  const image = await renderAsync(cardSvg(card, avatar), {
    fitTo: { mode: "width", value: CARD_WIDTH },
    // Text needs fonts: DejaVu Sans from the `dejavu-fonts-ttf` package, not the host's, so that a
    // host without fonts (a slim container) draws the same card (docs/design/pages.md).
    font: { loadSystemFonts: false, fontFiles: CARD_FONTS, defaultFontFamily: "DejaVu Sans", sansSerifFamily: "DejaVu Sans" },
  });
  return image.asPng();
}

/**
 * The avatar's bytes when it is one of this service's image files (generated, automatic or card
 * avatars); an avatar elsewhere is not fetched (no request leaves the service for a card), and a
 * missing file draws the initial instead.
 */
async function avatarPng(services: Services, avatarUrl: string | null): Promise<Uint8Array | undefined> {
  const prefix = `${FILES_PATH}/`;
  if (!avatarUrl?.startsWith(prefix)) return undefined;
  const name = avatarUrl.slice(prefix.length);
  if (!/^[A-Za-z0-9_-]{1,128}\.png$/.test(name)) return undefined;
  try {
    return await imageFile(services, name);
  } catch (error) {
    services.log.warn({ err: error, avatar: avatarUrl }, "share card drawn without its avatar");
    return undefined;
  }
}
