import type { Response } from "express";
import { escapeHtml } from "../../toolkit/http/text.ts";
import type { OfflineCheckout } from "../../toolkit/providers/payments/types.ts";
import { checkoutTitle } from "./views.ts";

// Every interpolated value goes through escapeHtml: the page never carries markup it did not write.

const STYLE = `
body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1d1f23}
main{max-width:26rem;margin:3rem auto;padding:2rem;background:#fff;border-radius:12px;box-shadow:0 1px 4px rgba(0,0,0,.12)}
h1{font-size:1.35rem;margin:0 0 .75rem}
.note{font-size:.875rem;color:#555b66;margin-top:1.25rem}
.actions{display:flex;gap:.75rem;margin-top:1.5rem}
button{flex:1;padding:.6rem;font:inherit;font-weight:600;border-radius:6px;cursor:pointer;border:1px solid #2457d6}
button:focus{outline:3px solid #2457d6;outline-offset:2px}
.pay{background:#2457d6;color:#fff}
.cancel{background:#fff;color:#2457d6}
`;

function body(checkout: OfflineCheckout, csrfToken: string, path: string): string {
  if (checkout.status === "complete") {
    return `<p>This checkout is complete.</p><p><a href="${escapeHtml(checkout.successUrl)}">Continue</a></p>`;
  }
  if (checkout.status === "expired") {
    return `<p>This checkout has expired: start a new one.</p><p><a href="${escapeHtml(checkout.cancelUrl)}">Go back</a></p>`;
  }
  if (checkout.subscribed) {
    // Issue 31 M4: a second checkout of an account that has since subscribed sells nothing.
    return `<p>Your account already has a subscription, so this checkout cannot be paid. Nothing was charged: change your plan from your account's billing settings instead.</p><p><a href="${escapeHtml(checkout.cancelUrl)}">Go back</a></p>`;
  }
  return `<form method="post" action="${escapeHtml(path)}">
<input type="hidden" name="csrf_token" value="${escapeHtml(csrfToken)}">
<div class="actions">
<button type="submit" class="pay" name="action" value="pay">Pay</button>
<button type="submit" class="cancel" name="action" value="cancel">Cancel</button>
</div>
</form>
<p class="note">This server has no payment provider configured: paying here starts the subscription and charges nothing.</p>`;
}

/** The offline provider's checkout page: what is bought, and a form with Pay and Cancel. */
export function renderCheckoutPage(checkout: OfflineCheckout, csrfToken: string): string {
  const title = escapeHtml(checkoutTitle(checkout));
  const path = `/v1/billing/local-checkout/${encodeURIComponent(checkout.id)}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Persona checkout</title>
<style>${STYLE}</style>
</head>
<body>
<main>
<h1>${title}</h1>
${body(checkout, csrfToken, path)}
</main>
</body>
</html>
`;
}

/**
 * Sent so that it cannot be framed (clickjacking on Pay: `frame-ancestors 'none'`, and
 * X-Frame-Options for browsers without it, issue 31 I3), cached or made to load anything. The
 * return addresses' origins are in `form-action`: browsers apply it to the redirect that follows the
 * form post, and with `'self'` alone Chromium stops the 303.
 */
export function sendCheckoutPage(res: Response, checkout: OfflineCheckout, csrfToken: string): void {
  const origins = [...new Set([checkout.successUrl, checkout.cancelUrl].map((url) => new URL(url).origin))].join(" ");
  res
    .status(200)
    .set({
      "Content-Security-Policy": `default-src 'none'; style-src 'unsafe-inline'; form-action 'self' ${origins}; frame-ancestors 'none'`,
      "X-Frame-Options": "DENY",
      "Cache-Control": "no-store",
      "Referrer-Policy": "no-referrer",
      "X-Content-Type-Options": "nosniff",
    })
    .type("html")
    .send(renderCheckoutPage(checkout, csrfToken));
}
