import { pageBody, pageWindow } from "../../toolkit/http/paging.ts";
import { callerOf } from "../../toolkit/http/principal.ts";
import type { Handler, HandlerMap } from "../../toolkit/http/router.ts";
import * as marketplace from "./service.ts";
import { toCopy, toFeatured, toListing, toListingDetail, toRating, toReview } from "./views.ts";

// The marketplace's reads need no credential; a caller who sends one is shown what its content settings allow.
const marketplace_list: Handler<"marketplace_list"> = async ({ services, req, query }) => {
  const window = pageWindow(query);
  const page = await marketplace.list(services, callerOf(req)?.userId, { category: query.category, q: query.q }, query.sort ?? "popular", window);
  return { status: 200, body: pageBody(page, window, (row) => toListing(row, services.config)) };
};

const marketplace_featured: Handler<"marketplace_featured"> = async ({ services, req }) => ({
  status: 200,
  body: { data: (await marketplace.featured(services, callerOf(req)?.userId)).map((item) => toFeatured(item, services.config)) },
});

const marketplace_categories: Handler<"marketplace_categories"> = async ({ services, req }) => ({
  status: 200,
  body: { data: (await marketplace.categories(services, callerOf(req)?.userId)) as never },
});

const marketplace_get: Handler<"marketplace_get"> = async ({ services, params }) => {
  const listing = await marketplace.requireListing(services, params.id);
  return { status: 200, body: { data: toListingDetail(listing, await marketplace.sampleMessages(services, listing), services.config) } };
};

const marketplace_rate: Handler<"marketplace_rate"> = async ({ services, principal, params, body }) => {
  const { rating, created } = await marketplace.rate(services, principal.userId, params.id, body);
  return created ? { status: 201, body: { data: toRating(rating) } } : { status: 200, body: { data: toRating(rating) } };
};

const marketplace_reviews: Handler<"marketplace_reviews"> = async ({ services, params, query }) => {
  const window = pageWindow(query);
  return { status: 200, body: pageBody(await marketplace.reviews(services, params.id, query.sort ?? "recent", window), window, toReview) };
};

const marketplace_use: Handler<"marketplace_use"> = async ({ services, principal, params }) => {
  const persona = await marketplace.use(services, principal.userId, params.id);
  return { status: 200, body: { data: toCopy(persona, persona.source_listing_id ?? params.id) } };
};

export const handlers = {
  marketplace_list,
  marketplace_featured,
  marketplace_categories,
  marketplace_get,
  marketplace_rate,
  marketplace_reviews,
  marketplace_use,
} satisfies Partial<HandlerMap>;
