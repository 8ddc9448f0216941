import type { Services } from "../../toolkit/services.ts";
import { showsMature, type ContentRating } from "./store.ts";

// Content ratings (issue 41, docs/adr/0353): the one rule of which ratings a list shows its viewer.
// Explore, the marketplace, the feed and the OpenAI-compatible model list all ask it.

const GENERAL_ONLY: readonly ContentRating[] = ["general"];
const EVERY_RATING: readonly ContentRating[] = ["general", "mature"];

/**
 * The ratings `viewerId` is shown: `mature` too only when the server allows it (MATURE_CONTENT) and
 * the account opted in; an anonymous viewer (the marketplace's pages) sees `general` only.
 */
export async function ratingsShownTo(services: Services, viewerId: string | undefined): Promise<readonly ContentRating[]> {
  if (!viewerId || services.config.safety.matureContent === "off") return GENERAL_ONLY;
  return (await showsMature(services.db.knex, viewerId)) ? EVERY_RATING : GENERAL_ONLY;
}
