import type { Knex } from "knex";

/**
 * Curating the marketplace's featured shelf (`marketplace_listings.featured_*`, read by
 * server/areas/marketplace). Only the admin CLI writes it; there is no API endpoint for it.
 */
export async function setListingFeatured(knex: Knex, listingId: string, reason: string | null, at: Date | null): Promise<boolean> {
  return (await knex("marketplace_listings").where({ id: listingId }).update({ featured_reason: reason, featured_at: at })) > 0;
}
