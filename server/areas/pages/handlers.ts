import type { Request, Response } from "express";
import { DATABASE_RETRY_AFTER_SECONDS, isDatabaseUnavailable } from "../../toolkit/db/unavailable.ts";
import { ApiError } from "../../toolkit/http/errors.ts";
import { HANDLED, type Handler, type HandlerMap } from "../../toolkit/http/router.ts";
import type { Logger } from "../../toolkit/logger.ts";
import type { Services } from "../../toolkit/services.ts";
import { cardImage, cardVersion, type CardInput } from "./card-image.ts";
import { renderListingPage } from "./listing-page.ts";
import { OEMBED_CACHE_AGE, oembedAnswer } from "./oembed.ts";
import { renderPersonaPage } from "./persona-page.ts";
import { sendPage } from "./policy.ts";
import { showResetPassword, submitResetPassword } from "./reset-password.ts";
import { personaCard, publicListing, publicPersona } from "./service.ts";
import { cardOf, cardOfListing } from "./share-meta.ts";
import { sendFailure, sendNotFound } from "./status-pages.ts";
import { confirmVerifyEmail, showVerifyEmail } from "./verify-email.ts";

// The pages' operations (spec/pages.tsp). A page answers in HTML whatever happens: a 404 of the
// service is the not-found page of what was asked for, an unreachable database a 503 page, anything
// else a 500 page (logged); nothing of an error reaches the page. Their requests are not held to
// the contract's parameters (pageStages in app.ts, for the operations whose `@meta` says `page`):
// each reads what it needs and ignores the rest.

/** How long a public page may be cached: its counts move, its texts seldom. */
const PUBLIC_PAGE_SECONDS = 60;

/** A card whose link names another version is the current card, cached briefly. */
const CARD_UNVERSIONED_SECONDS = 300;

/** Runs a page, answering its failures as pages. */
async function page(res: Response, log: Logger, what: "persona" | "listing" | "page", render: () => Promise<void>): Promise<typeof HANDLED> {
  try {
    await render();
  } catch (error) {
    if (res.headersSent) throw error;
    if (error instanceof ApiError && error.status === 404) sendNotFound(res, what);
    else if (isDatabaseUnavailable(error)) sendFailure(res, DATABASE_RETRY_AFTER_SECONDS);
    else {
      log.error({ err: error }, "page failed");
      sendFailure(res);
    }
  }
  return HANDLED;
}

/** A query or a form as what it is before any check: untrusted values, each read for itself. */
const fields = (value: unknown): Record<string, unknown> => (value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {});

const pages_verify_email: Handler<"pages_verify_email"> = async ({ services, req, res, log }) => page(res, log, "page", () => showVerifyEmail(services, res, fields(req.query)));

const pages_confirm_email: Handler<"pages_confirm_email"> = async ({ services, req, res, log }) => page(res, log, "page", () => confirmVerifyEmail(services, res, fields(req.body)));

const pages_reset_password: Handler<"pages_reset_password"> = async ({ services, req, res, log }) => page(res, log, "page", () => showResetPassword(services, res, fields(req.query)));

const pages_change_password: Handler<"pages_change_password"> = async ({ services, req, res, log }) => page(res, log, "page", () => submitResetPassword(services, res, fields(req.body)));

const pages_persona: Handler<"pages_persona"> = async ({ services, req, res, log }) =>
  page(res, log, "persona", async () => {
    const found = await publicPersona(services, String(req.params.id));
    sendPage(res, 200, renderPersonaPage(services.config, found), { cache: { publicSeconds: PUBLIC_PAGE_SECONDS } });
  });

const pages_persona_card: Handler<"pages_persona_card"> = async ({ services, req, res, log }) =>
  page(res, log, "persona", async () => {
    const { persona, creatorName } = await personaCard(services, String(req.params.id));
    await sendCard(services, req, res, cardOf(persona, creatorName));
  });

const pages_listing: Handler<"pages_listing"> = async ({ services, req, res, log }) =>
  page(res, log, "listing", async () => {
    const found = await publicListing(services, String(req.params.id));
    sendPage(res, 200, renderListingPage(services.config, found, cardOfListing(found.listing)), { cache: { publicSeconds: PUBLIC_PAGE_SECONDS } });
  });

const pages_oembed: Handler<"pages_oembed"> = async ({ services, query }) => ({
  status: 200,
  body: await oembedAnswer(services, query.url, query.format ?? "json"),
  headers: { "Cache-Control": `public, max-age=${OEMBED_CACHE_AGE}` },
});

/**
 * The card PNG, with its version as ETag (304 for a cache that has it). Asked for by its current
 * version (`?v=`, the link the pages give) it is immutable; asked for otherwise it is the current
 * card for a few minutes.
 */
async function sendCard(services: Services, req: Request, res: Response, card: CardInput): Promise<void> {
  const version = cardVersion(card);
  const etag = `"${version}"`;
  const current = req.query.v === version;
  res.set({
    ETag: etag,
    "Cache-Control": current ? "public, max-age=31536000, immutable" : `public, max-age=${CARD_UNVERSIONED_SECONDS}`,
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
  });
  const match = req.headers["if-none-match"];
  if (typeof match === "string" && match.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag)) {
    res.status(304).end();
    return;
  }
  const png = await cardImage(services, card);
  res.status(200).type("image/png").set("Content-Length", String(png.byteLength)).end(png);
}

export const handlers = {
  pages_verify_email,
  pages_confirm_email,
  pages_reset_password,
  pages_change_password,
  pages_persona,
  pages_persona_card,
  pages_listing,
  pages_oembed,
} satisfies Partial<HandlerMap>;

