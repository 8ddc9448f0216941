import type { Response } from "express";
import { renderDocument } from "./document.ts";
import { html, type Html } from "./html.ts";
import { sendPage } from "./policy.ts";

/** A page that only says something: a heading and a few sentences, in a card. */
export function messageDocument(title: string, body: Html, tone?: "alert" | "success"): string {
  const lead = tone ? html`<div class="${tone}" role="${tone === "alert" ? "alert" : "status"}">${body}</div>` : body;
  return renderDocument({ title, main: html`<div class="card narrow"><h1>${title}</h1>${lead}</div>` });
}

/** Sends a message page, never cached. */
export function sendMessage(res: Response, status: number, title: string, body: Html, tone?: "alert" | "success"): void {
  sendPage(res, status, messageDocument(title, body, tone), { cache: "no-store" });
}

/** 404: the same page whether the thing is private, deleted or never existed (nothing is told apart). */
export function sendNotFound(res: Response, what: "persona" | "listing" | "page"): void {
  const sentences: Record<typeof what, Html> = {
    persona: html`<p>This persona is not available. It may be private or deleted, or the link may be mistyped.</p>`,
    listing: html`<p>This marketplace listing is not available. It may have been withdrawn, or the link may be mistyped.</p>`,
    page: html`<p>There is no page at this address.</p>`,
  };
  sendMessage(res, 404, "Not found", sentences[what]);
}

/** 500 or 503: the page failed, and says whether trying again later may work. */
export function sendFailure(res: Response, retryAfterSeconds?: number): void {
  if (retryAfterSeconds !== undefined) {
    res.set("Retry-After", String(retryAfterSeconds));
    sendMessage(res, 503, "Temporarily unavailable", html`<p>The service cannot show this page right now. Try again in a minute.</p>`, "alert");
    return;
  }
  sendMessage(res, 500, "Something went wrong", html`<p>The service failed to show this page. Try again later.</p>`, "alert");
}
