import express, { type Request, type RequestHandler, type Response, type Router } from "express";
import { DATABASE_RETRY_AFTER_SECONDS, isDatabaseUnavailable } from "../../toolkit/db/unavailable.ts";
import { ApiError } from "../../toolkit/http/errors.ts";
import type { Services } from "../../toolkit/services.ts";
import { html, sendMessage, sendNotFound, sendPage, type PageStages } from "../pages/index.ts";
import { requireEmbeddable } from "./access.ts";
import { CHAT_SCRIPT, LOADER, type Asset } from "./assets.ts";
import { chatPagePolicy, renderChatPage } from "./chat-page.ts";
import { EMBED_PATHS } from "./paths.ts";

/**
 * The embed's browser side, outside the contract as the built-in pages are (server/areas/pages/):
 * the loader script, the chat page and its script. Behind the app-level stages every request has
 * (request id and log, load shedding, the per-client rate limit); the chat page takes an admission
 * place like a page. docs/design/embeds.md.
 */

/** How long a browser may keep the loader: a site's pages pick up a new one within minutes. */
const LOADER_SECONDS = 300;

/** The first path segments served here, lower-cased: any other request passes by. */
const SEGMENTS = new Set(["embed.js", "embed"]);

/** The embed's routes as one app-level stage (server/app.ts), beside the pages'. */
export function embedRoutes(services: Services, stages: PageStages): RequestHandler {
  const router = embedRouter(services, stages);
  return (req, res, next) => {
    const second = req.path.indexOf("/", 1);
    const first = req.path.slice(1, second < 0 ? undefined : second).toLowerCase();
    if (!SEGMENTS.has(first) || (req.method !== "GET" && req.method !== "HEAD")) return next();
    router(req, res, next);
  };
}

function embedRouter(services: Services, { admitted }: PageStages): Router {
  const router = express.Router({ caseSensitive: true, strict: false });
  router.get(EMBED_PATHS.loader, (req, res) => sendScript(req, res, LOADER, false));
  router.get(EMBED_PATHS.chatScript, (req, res) => sendScript(req, res, CHAT_SCRIPT, req.query.v === CHAT_SCRIPT.version));
  router.get(`${EMBED_PATHS.page}/:id`, admitted, (req, res, next) => {
    showChatPage(services, req, res).catch((error: unknown) => {
      if (res.headersSent) return next(error);
      if (error instanceof ApiError && error.status === 404) return sendNotFound(res, "persona");
      if (isDatabaseUnavailable(error)) return sendMessage(res.set("Retry-After", String(DATABASE_RETRY_AFTER_SECONDS)), 503, "Temporarily unavailable", html`<p>This chat cannot open right now. Try again in a minute.</p>`, "alert");
      req.log.error({ err: error }, "embed page failed");
      sendMessage(res, 500, "Something went wrong", html`<p>This chat failed to open. Try again later.</p>`, "alert");
    });
  });
  return router;
}

/**
 * The chat page of an embeddable persona, framed only by its allowed origins (`frame-ancestors`);
 * anything else is the not-found page, framed by nobody. Opened as a page of its own rather than
 * in a frame (the browser says so in `Sec-Fetch-Dest`), it refuses: an embed chats on its owner's
 * site, not from a link to it.
 */
async function showChatPage(services: Services, req: Request, res: Response): Promise<void> {
  const embeddable = await requireEmbeddable(services, String(req.params.id));
  const destination = req.get("sec-fetch-dest");
  if (destination !== undefined && destination !== "iframe") {
    return sendMessage(res, 403, "Open this chat on its website", html`<p>This chat works inside the website that embeds it.</p>`, "alert");
  }
  sendPage(res, 200, renderChatPage(embeddable), chatPagePolicy(embeddable.settings.allowedOrigins));
}

/**
 * A script, with its version as ETag (304 for a cache that has it). Asked for by its current
 * version it is immutable; the loader, whose address a site's pages hold, for a few minutes. Any
 * site may load it (`Cross-Origin-Resource-Policy: cross-origin`, for sites that isolate themselves).
 */
function sendScript(req: Request, res: Response, script: Asset, immutable: boolean): void {
  const etag = `"${script.version}"`;
  res.set({
    ETag: etag,
    "Cache-Control": immutable ? "public, max-age=31536000, immutable" : `public, max-age=${LOADER_SECONDS}`,
    "Cross-Origin-Resource-Policy": "cross-origin",
  });
  if (req.headers["if-none-match"]?.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag)) {
    res.status(304).end();
    return;
  }
  res.status(200).type("text/javascript; charset=utf-8").set("Content-Length", String(script.body.byteLength)).end(script.body);
}
