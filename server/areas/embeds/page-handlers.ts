import type { Request, Response } from "express";
import { DATABASE_RETRY_AFTER_SECONDS, isDatabaseUnavailable } from "../../toolkit/db/unavailable.ts";
import { ApiError } from "../../toolkit/http/errors.ts";
import { HANDLED, type Handler, type HandlerMap } from "../../toolkit/http/router.ts";
import type { Logger } from "../../toolkit/logger.ts";
import type { Services } from "../../toolkit/services.ts";
import { html, sendMessage, sendNotFound, sendPage } from "../pages/index.ts";
import { requireEmbeddable } from "./access.ts";
import { CHAT_SCRIPT, LOADER, type Asset } from "./assets.ts";
import { chatPagePolicy, renderChatPage } from "./chat-page.ts";

// The embed's browser side (spec/embeds.tsp, `embed_pages`): the loader script, the chat page and
// its script. Pages of the contract (`@meta` `page`): the app serves them through the pages' stages
// (server/app.ts), so their query is not held to the contract's (the loader adds `bubble` and
// `host`, a site may add anything) and each answers its own refusals, the chat page as pages.
// docs/design/embeds.md.

/** How long a browser may keep the loader: a site's pages pick up a new one within minutes. */
const LOADER_SECONDS = 300;

const embed_pages_loader: Handler<"embed_pages_loader"> = async ({ req, res }) => sendScript(req, res, LOADER, false);

const embed_pages_chat_script: Handler<"embed_pages_chat_script"> = async ({ req, res }) => sendScript(req, res, CHAT_SCRIPT, req.query.v === CHAT_SCRIPT.version);

const embed_pages_chat_page: Handler<"embed_pages_chat_page"> = async ({ services, req, res, log }) => {
  try {
    await showChatPage(services, req, res);
  } catch (error) {
    if (res.headersSent) throw error;
    sendChatPageFailure(res, log, error);
  }
  return HANDLED;
};

/**
 * The chat page of an embeddable persona, framed only by its allowed origins (`frame-ancestors`);
 * anything else is the not-found page, framed by nobody. Opened as a page of its own rather than
 * in a frame (the browser says so in `Sec-Fetch-Dest`), it refuses: an embed chats on its owner's
 * site, not from a link to it. The id is read as sent (a malformed one is the same 404).
 */
async function showChatPage(services: Services, req: Request, res: Response): Promise<void> {
  const embeddable = await requireEmbeddable(services, String(req.params.id));
  const destination = req.get("sec-fetch-dest");
  if (destination !== undefined && destination !== "iframe") {
    return sendMessage(res, 403, "Open this chat on its website", html`<p>This chat works inside the website that embeds it.</p>`, "alert");
  }
  sendPage(res, 200, renderChatPage(embeddable), chatPagePolicy(embeddable.settings.allowedOrigins));
}

/** A failure as a page: 404 as for a persona not embeddable, 503 with Retry-After for the database, else 500 (logged). */
function sendChatPageFailure(res: Response, log: Logger, error: unknown): void {
  if (error instanceof ApiError && error.status === 404) return sendNotFound(res, "persona");
  if (isDatabaseUnavailable(error)) {
    res.set("Retry-After", String(DATABASE_RETRY_AFTER_SECONDS));
    return sendMessage(res, 503, "Temporarily unavailable", html`<p>This chat cannot open right now. Try again in a minute.</p>`, "alert");
  }
  log.error({ err: error }, "embed page failed");
  sendMessage(res, 500, "Something went wrong", html`<p>This chat failed to open. Try again later.</p>`, "alert");
}

/**
 * A script, with its version as ETag (304 for a cache that has it). Asked for by its current
 * version it is immutable; the loader, whose address a site's pages hold, for a few minutes. Any
 * site may load it (`Cross-Origin-Resource-Policy: cross-origin`, for sites that isolate themselves).
 */
function sendScript(req: Request, res: Response, script: Asset, immutable: boolean): typeof HANDLED {
  const etag = `"${script.version}"`;
  res.set({
    ETag: etag,
    "Cache-Control": immutable ? "public, max-age=31536000, immutable" : `public, max-age=${LOADER_SECONDS}`,
    "Cross-Origin-Resource-Policy": "cross-origin",
  });
  if (req.headers["if-none-match"]?.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag)) {
    res.status(304).end();
    return HANDLED;
  }
  res.status(200).type("text/javascript; charset=utf-8").set("Content-Length", String(script.body.byteLength)).end(script.body);
  return HANDLED;
}

export const pageHandlers = {
  embed_pages_loader,
  embed_pages_chat_script,
  embed_pages_chat_page,
} satisfies Partial<HandlerMap>;
