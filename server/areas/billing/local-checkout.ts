import { createHmac } from "node:crypto";
import { instanceSecret } from "../../toolkit/db/instance-secrets.ts";
import { constantTimeEqual } from "../../toolkit/tokens.ts";
import { conflict, invalidField, notFound, notFoundExplained, providerFailure } from "../../toolkit/http/error-catalogue.ts";
import { OfflineCheckoutError } from "../../toolkit/providers/payments/local.ts";
import type { OfflineCheckout, OfflinePayments } from "../../toolkit/providers/payments/types.ts";
import type { Services } from "../../toolkit/services.ts";
import { paymentsOf } from "./events.ts";

// The offline provider's checkout page (what Stripe's hosted checkout is to Stripe). Its form is
// credential-free, so it carries a token that binds it to the page the server rendered.

const CSRF_TTL_MS = 60 * 60 * 1000;

const csrfSecret = (services: Services) => instanceSecret(services.db.knex, "billing_checkout_csrf", undefined);

function csrfMac(secret: string, sessionId: string, issuedAt: number): string {
  return createHmac("sha256", secret).update(JSON.stringify([sessionId, String(issuedAt)])).digest("base64url");
}

async function csrfToken(services: Services, sessionId: string): Promise<string> {
  const issuedAt = services.now().getTime();
  return `${issuedAt}.${csrfMac(await csrfSecret(services), sessionId, issuedAt)}`;
}

async function checkCsrfToken(services: Services, sessionId: string, token: string): Promise<void> {
  const message = "The form's csrf_token is invalid or expired: reload the checkout page";
  const refused = invalidField("/body/csrf_token", "is invalid or expired", message);
  const match = /^(\d{1,16})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!match) throw refused;
  const issuedAt = Number(match[1]);
  const age = services.now().getTime() - issuedAt;
  if (age < -60_000 || age > CSRF_TTL_MS) throw refused;
  if (!constantTimeEqual(match[2]!, csrfMac(await csrfSecret(services), sessionId, issuedAt))) throw refused;
}

/** The offline provider, or 404: with Stripe configured there is no local checkout. */
function offline(services: Services): OfflinePayments {
  const local = paymentsOf(services).local;
  if (!local) throw notFoundExplained("There is no local checkout: this server takes payments through Stripe");
  return local;
}

async function requireCheckout(services: Services, local: OfflinePayments, sessionId: string): Promise<OfflineCheckout> {
  const checkout = await local.checkout(sessionId, services.now());
  if (!checkout) throw notFound("Checkout session");
  return checkout;
}

/** What the page shows, with a fresh token for its form. */
export async function checkoutPage(services: Services, sessionId: string): Promise<{ checkout: OfflineCheckout; csrfToken: string }> {
  const checkout = await requireCheckout(services, offline(services), sessionId);
  return { checkout, csrfToken: await csrfToken(services, checkout.id) };
}

/**
 * The buyer's choice on the page: `pay` starts the subscription (no money moves) and answers the
 * success URL, `cancel` answers the cancel URL and leaves the checkout open, as Stripe's does.
 * 409 when the checkout has expired or is already complete.
 */
export async function completeCheckout(services: Services, sessionId: string, action: "pay" | "cancel", token: string): Promise<string> {
  const local = offline(services);
  const checkout = await requireCheckout(services, local, sessionId);
  await checkCsrfToken(services, checkout.id, token);
  if (checkout.status !== "open") throw conflict(new OfflineCheckoutError(checkout.status).message);
  if (action === "cancel") return checkout.cancelUrl;
  try {
    await local.pay(checkout.id, services.now());
  } catch (error) {
    if (error instanceof OfflineCheckoutError) throw conflict(error.message);
    throw providerFailure(error);
  }
  return checkout.successUrl;
}
