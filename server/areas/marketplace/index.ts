// The marketplace area's public surface: listings, reviews and installs.
import { defineArea } from "../../toolkit/area.ts";
import { marketplaceAccountData } from "./account-data.ts";
import { handlers } from "./handlers.ts";

export { listingUrl, publish } from "./service.ts";
export { toPublication } from "./views.ts";
// What the listing's public page shows (server/areas/pages/).
export { requireListing, reviews, sampleMessages, visibleListingOfPersona } from "./service.ts";
export { averageRating, tagline, toListingDetail, toReview } from "./views.ts";
export type { ListingView } from "./store.ts";

export const area = defineArea({ name: "marketplace", handlers, accountData: marketplaceAccountData, tables: ["marketplace_listings", "marketplace_search", "marketplace_trending", "marketplace_category_counts", "ratings"] });
export { feature, unfeature } from "./service.ts";
// What the safety area reads and changes (issue 41).
export { findListingForModeration, findReviewForModeration, setListingTakedown, setReviewTakedown } from "./service.ts";
