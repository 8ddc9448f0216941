import { GeneratedMarketplace } from "../generated/resources.ts";

/**
 * The marketplace: browsing needs no credentials; rating and `use` act as the caller. Every method
 * is generated from the contract (GeneratedMarketplace).
 *
 * @example
 * for await (const listing of client.marketplace.list({ q: "astronomy", sort: "top_rated" })) console.log(listing.name);
 * const { data: copy } = await client.marketplace.use(listingId);
 */
export class Marketplace extends GeneratedMarketplace {}
