import type { Response } from "express";
import type { EmailTokenState } from "../auth/index.ts";
import { html, type Html } from "./html.ts";
import { sendMessage } from "./status-pages.ts";

/** Which e-mailed link a page is about. */
export type MailedLink = "verify_email" | "reset_password";

/** Why an e-mailed link's page has no form to show: no token in it, or a token that is not usable. */
export type LinkProblem = "missing" | Exclude<EmailTokenState, "usable">;

/**
 * The status of each: a link without its token is a bad request (400); a token the service never
 * issued, nothing to find (404); a used or expired one, gone for good (410), which tells a mail
 * client or scanner that retries the link that it will never work again.
 */
const STATUS: Record<LinkProblem, number> = { missing: 400, unknown: 404, used: 410, expired: 410 };

const NEW_RESET = html`<p>Ask for a new link where you asked for this one (your app's "forgot password", or <code>POST /v1/auth/forgot-password</code>).</p>`;

const PAGES: Record<MailedLink, Record<LinkProblem, { title: string; body: Html }>> = {
  verify_email: {
    missing: { title: "This link is incomplete", body: html`<p>The link has no token. Open the link from the e-mail exactly as it was sent: some mail programs cut long links.</p>` },
    unknown: { title: "This link does not work", body: html`<p>The link may have been mistyped or cut. Use the link from your latest confirmation e-mail.</p>` },
    used: { title: "This link was already used", body: html`<p>Each confirmation link works once. If it was you who used it, your e-mail address is confirmed and there is nothing left to do.</p>` },
    expired: { title: "This link has expired", body: html`<p>Confirmation links work for 24 hours after the e-mail is sent, and this one is older. Your address is not confirmed yet.</p>` },
  },
  reset_password: {
    missing: { title: "This link is incomplete", body: html`<p>The link has no token. Open the link from the e-mail exactly as it was sent: some mail programs cut long links.</p>` },
    unknown: { title: "This link does not work", body: html`<p>The link may have been mistyped or cut. Use the link from your latest password reset e-mail.</p>${NEW_RESET}` },
    used: { title: "This link was already used", body: html`<p>Each reset link works once, and a reset makes every earlier link stop working. Your password is whatever it was last set to.</p>${NEW_RESET}` },
    expired: { title: "This link has expired", body: html`<p>Reset links work for 1 hour after the e-mail is sent, and this one is older. Your password has not changed.</p>${NEW_RESET}` },
  },
};

/** Sends the page that says what is wrong with the link, with its status. */
export function sendLinkProblem(res: Response, link: MailedLink, problem: LinkProblem): void {
  const page = PAGES[link][problem];
  sendMessage(res, STATUS[problem], page.title, page.body, "alert");
}

/** A query or form value as one string, or undefined (absent, empty, repeated or not text). */
export function single(value: unknown): string | undefined {
  return typeof value === "string" && value.length > 0 && value.length <= 512 ? value : undefined;
}
