import type { Response } from "express";
import type { Services } from "../../toolkit/services.ts";
import { emailTokenState, verifyEmail } from "../auth/index.ts";
import { PERSON_PATHS } from "../../toolkit/person-links.ts";
import { formToken, formTokenValid } from "./csrf.ts";
import { renderDocument } from "./document.ts";
import { html } from "./html.ts";
import { sendLinkProblem, single } from "./link-problems.ts";
import { sendPage } from "./policy.ts";
import { sendMessage } from "./status-pages.ts";

/**
 * The verification e-mail's link, `/verify-email?token=…`. Opening it changes nothing: mail
 * scanners and link previews fetch every link of a mail, and a GET that confirmed would confirm
 * addresses nobody opened. The page shows a Confirm button instead, a form that posts the token
 * back with an anti-forgery token bound to this page (csrf.ts); the post confirms through the same
 * service function as `POST /v1/auth/verify-email`.
 */

/** GET: the Confirm page for a usable token, else the page that says what is wrong with the link. */
export async function showVerifyEmail(services: Services, res: Response, query: Record<string, unknown>): Promise<void> {
  const token = single(query.token);
  if (!token) return sendLinkProblem(res, "verify_email", "missing");
  const state = await emailTokenState(services, token, "verify_email");
  if (state !== "usable") return sendLinkProblem(res, "verify_email", state);
  const csrf = await formToken(services, "verify_email", token);
  const main = html`<div class="card narrow">
<h1>Confirm your e-mail address</h1>
<p>Press the button to confirm that this e-mail address belongs to your Persona account.</p>
<form method="post" action="${PERSON_PATHS.verifyEmail}">
<input type="hidden" name="token" value="${token}">
<input type="hidden" name="csrf_token" value="${csrf}">
<button type="submit">Confirm my address</button>
</form>
<p class="hint">If you did not create an account, close this page: nothing happens until the button is pressed.</p>
</div>`;
  sendPage(res, 200, renderDocument({ title: "Confirm your e-mail address", main }), { cache: "no-store" });
}

/** POST: confirms, or says why not; a form that did not come from the page is refused 403. */
export async function confirmVerifyEmail(services: Services, res: Response, form: Record<string, unknown>): Promise<void> {
  const token = single(form.token);
  if (!token) return sendLinkProblem(res, "verify_email", "missing");
  if (!(await formTokenValid(services, "verify_email", token, single(form.csrf_token) ?? ""))) return sendForgedForm(res, token);
  try {
    await verifyEmail(services, undefined, token);
  } catch {
    // Used, expired or unknown (or used a moment ago by a second press): the page says which.
    const state = await emailTokenState(services, token, "verify_email");
    return sendLinkProblem(res, "verify_email", state === "usable" ? "unknown" : state);
  }
  sendMessage(res, 200, "E-mail address confirmed", html`<p>Thank you: your e-mail address is confirmed. You can close this page.</p>`, "success");
}

function sendForgedForm(res: Response, token: string): void {
  const again = `${PERSON_PATHS.verifyEmail}?token=${encodeURIComponent(token)}`;
  sendMessage(res, 403, "Please confirm again", html`<p>This form expired or did not come from this site, so nothing was confirmed.</p><p><a href="${again}">Open the confirmation page again</a></p>`, "alert");
}
