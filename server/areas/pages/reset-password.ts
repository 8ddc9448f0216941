import type { Response } from "express";
import { PERSON_PATHS } from "../../toolkit/person-links.ts";
import type { Services } from "../../toolkit/services.ts";
import { emailTokenState, resetPassword, type ResetRevoked } from "../auth/index.ts";
import { formToken, formTokenValid } from "./csrf.ts";
import { renderDocument } from "./document.ts";
import { html } from "./html.ts";
import { sendLinkProblem, single } from "./link-problems.ts";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, PASSWORD_RULE_TEXT, passwordProblem } from "./password-rule.ts";
import { sendPage } from "./policy.ts";
import { sendMessage } from "./status-pages.ts";

/**
 * The password-reset e-mail's link, `/reset-password?token=…`: a form with the rule stated, the
 * new password twice, and every refusal shown next to its field (the two do not match, the
 * password breaks the rule) or as the link's own page (used, expired). A reset goes through the
 * same service function as `POST /v1/auth/reset-password`, so it revokes the same credentials, and
 * the page says what it revoked. Opening the link changes nothing (a mail scanner's GET).
 */

interface FieldErrors {
  password?: string;
  confirm?: string;
}

function renderForm(token: string, csrf: string, errors: FieldErrors = {}): string {
  const invalid = (message: string | undefined) => (message ? "true" : "false");
  const passwordDescribed = errors.password ? "password-rule password-error" : "password-rule";
  const main = html`<div class="card narrow">
<h1>Choose a new password</h1>
${errors.password || errors.confirm ? html`<p class="alert" role="alert">The password was not changed: see the ${errors.password ? "new password" : "repeated password"} below.</p>` : ""}
<form method="post" action="${PERSON_PATHS.resetPassword}" novalidate>
<input type="hidden" name="token" value="${token}">
<input type="hidden" name="csrf_token" value="${csrf}">
<label for="new_password">New password</label>
<input type="password" id="new_password" name="new_password" autocomplete="new-password" required minlength="${PASSWORD_MIN_LENGTH}" maxlength="${PASSWORD_MAX_LENGTH}" aria-describedby="${passwordDescribed}" aria-invalid="${invalid(errors.password)}">
<p class="hint" id="password-rule">${PASSWORD_RULE_TEXT}</p>
${errors.password ? html`<p class="field-error" id="password-error">${errors.password}</p>` : ""}
<label for="confirm_password">New password again</label>
<input type="password" id="confirm_password" name="confirm_password" autocomplete="new-password" required maxlength="${PASSWORD_MAX_LENGTH}" aria-invalid="${invalid(errors.confirm)}"${errors.confirm ? html` aria-describedby="confirm-error"` : ""}>
${errors.confirm ? html`<p class="field-error" id="confirm-error">${errors.confirm}</p>` : ""}
<button type="submit">Change password</button>
</form>
<p class="hint">Changing it signs you out everywhere, ends the access of every app you authorized, and revokes every API key of your account.</p>
</div>`;
  return renderDocument({ title: "Choose a new password", main });
}

/** GET: the form for a usable token, else the page that says what is wrong with the link. */
export async function showResetPassword(services: Services, res: Response, query: Record<string, unknown>): Promise<void> {
  const token = single(query.token);
  if (!token) return sendLinkProblem(res, "reset_password", "missing");
  const state = await emailTokenState(services, token, "reset_password");
  if (state !== "usable") return sendLinkProblem(res, "reset_password", state);
  sendPage(res, 200, renderForm(token, await formToken(services, "reset_password", token)), { cache: "no-store" });
}

/** POST: sets the password, or shows the form again with what to fix, or the link's own page. */
export async function submitResetPassword(services: Services, res: Response, form: Record<string, unknown>): Promise<void> {
  const token = single(form.token);
  if (!token) return sendLinkProblem(res, "reset_password", "missing");
  if (!(await formTokenValid(services, "reset_password", token, single(form.csrf_token) ?? ""))) return sendForgedForm(res, token);
  const state = await emailTokenState(services, token, "reset_password");
  if (state !== "usable") return sendLinkProblem(res, "reset_password", state);
  const password = typeof form.new_password === "string" ? form.new_password : "";
  const confirm = typeof form.confirm_password === "string" ? form.confirm_password : "";
  const errors: FieldErrors = {
    password: passwordProblem(password),
    confirm: password !== confirm ? "The two passwords are not the same: type the new password twice." : undefined,
  };
  if (errors.password || errors.confirm) {
    // A fresh anti-forgery token: the one posted may be close to its end.
    return sendPage(res, 400, renderForm(token, await formToken(services, "reset_password", token), errors), { cache: "no-store" });
  }
  let revoked: ResetRevoked;
  try {
    revoked = await resetPassword(services, token, password);
  } catch {
    // Spent between the check and the reset (a second press, another tab).
    const now = await emailTokenState(services, token, "reset_password");
    return sendLinkProblem(res, "reset_password", now === "usable" ? "unknown" : now);
  }
  sendMessage(res, 200, "Password changed", html`<p>Your password was changed. Sign in again with the new one.</p>
<p>For your account's safety the reset also ended what could still act for it:</p>
<ul class="plain">
<li>${count(revoked.sessions, "sign-in", "sign-ins")} ended (every device is signed out),</li>
<li>${count(revoked.oauth_grants, "app access", "app accesses")} revoked (authorize those apps again),</li>
<li>${count(revoked.api_keys, "API key", "API keys")} revoked (create new keys for your scripts and integrations).</li>
</ul>`, "success");
}

const count = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

function sendForgedForm(res: Response, token: string): void {
  const again = `${PERSON_PATHS.resetPassword}?token=${encodeURIComponent(token)}`;
  sendMessage(res, 403, "Please try again", html`<p>This form expired or did not come from this site, so the password was not changed.</p><p><a href="${again}">Open the form again</a></p>`, "alert");
}
