import type { Response } from "express";
import { escapeHtml } from "../../../toolkit/http/text.ts";
import { SCOPE_WORDS, type AuthorizeRequest } from "./flow.ts";

// Every interpolated value goes through escapeHtml: the page never carries markup it did not write.

export interface ConsentPage {
  clientName: string;
  request: AuthorizeRequest;
  scopes: string[];
  csrfToken: string;
  email?: string;
  error?: string;
}

const STYLE = `
body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1d1f23}
main{max-width:26rem;margin:3rem auto;padding:2rem;background:#fff;border-radius:12px;box-shadow:0 1px 4px rgba(0,0,0,.12)}
h1{font-size:1.35rem;margin:0 0 .75rem}
ul{padding-left:1.25rem;margin:.25rem 0 1.25rem}
label{display:block;font-weight:600;margin:.75rem 0 .25rem}
input[type=email],input[type=password]{box-sizing:border-box;width:100%;padding:.55rem .65rem;font:inherit;border:1px solid #8a8f98;border-radius:6px}
input:focus,button:focus{outline:3px solid #2457d6;outline-offset:2px}
.alert{background:#fdecea;color:#8a1c12;border:1px solid #e3a59d;border-radius:6px;padding:.6rem .8rem}
.actions{display:flex;gap:.75rem;margin-top:1.5rem}
button{flex:1;padding:.6rem;font:inherit;font-weight:600;border-radius:6px;cursor:pointer;border:1px solid #2457d6}
.approve{background:#2457d6;color:#fff}
.deny{background:#fff;color:#2457d6}
.note{font-size:.875rem;color:#555b66;margin-top:1.25rem}
`;

function hidden(name: string, value: string | undefined): string {
  return value === undefined ? "" : `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`;
}

/** The login-and-consent page of GET /v1/oauth/authorize (and of a failed login on its POST). */
export function renderConsentPage(page: ConsentPage): string {
  const name = escapeHtml(page.clientName);
  const { request } = page;
  const scopes = page.scopes.map((s) => `<li>${escapeHtml(SCOPE_WORDS[s] ?? s)} <small>(${escapeHtml(s)})</small></li>`).join("");
  const error = page.error ? `<p class="alert" role="alert" id="form-error">${escapeHtml(page.error)}</p>` : "";
  const described = page.error ? ` aria-describedby="form-error"` : "";
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Authorize ${name}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
<h1>${name} wants access to your Persona account</h1>
<p>If you sign in and approve, ${name} will be able to:</p>
<ul>${scopes}</ul>
${error}
<form method="post" action="/v1/oauth/authorize">
${hidden("client_id", request.client_id)}
${hidden("redirect_uri", request.redirect_uri)}
${hidden("scope", request.scope)}
${hidden("state", request.state)}
${hidden("code_challenge", request.code_challenge)}
${hidden("code_challenge_method", request.code_challenge_method)}
${hidden("csrf_token", page.csrfToken)}
<label for="email">E-mail</label>
<input type="email" id="email" name="email" autocomplete="username" required maxlength="254"${described} value="${escapeHtml(page.email ?? "")}">
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required maxlength="128"${described}>
<div class="actions">
<button type="submit" class="approve" name="decision" value="approve">Approve</button>
<button type="submit" class="deny" name="decision" value="deny" formnovalidate>Deny</button>
</div>
</form>
<p class="note">You will be sent back to ${escapeHtml(new URL(request.redirect_uri).origin)}.</p>
</main>
</body>
</html>
`;
}

/**
 * Sends the page with headers that keep it from being framed (clickjacking on the Approve button:
 * `frame-ancestors 'none'`, and X-Frame-Options for browsers without it, issue 31 I3), cached, or
 * made to load anything: styles are inline, the form posts only to this service.
 * `form-action` also names the origin of the (already verified) redirect_uri: browsers apply it to
 * the redirects that follow a form post, and with `'self'` alone Chromium aborts the 303 back to
 * the client app.
 */
export function consentPolicy(redirectUri: string): string {
  return `default-src 'none'; style-src 'unsafe-inline'; form-action 'self' ${new URL(redirectUri).origin}; frame-ancestors 'none'`;
}

export function sendConsentPage(res: Response, page: ConsentPage): void {
  res
    .status(200)
    .set({
      "Content-Security-Policy": consentPolicy(page.request.redirect_uri),
      "X-Frame-Options": "DENY",
      "Cache-Control": "no-store",
      "Referrer-Policy": "no-referrer",
      "X-Content-Type-Options": "nosniff",
    })
    .type("html")
    .send(renderConsentPage(page));
}
