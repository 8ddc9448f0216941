import type { Knex } from "knex";
import { publicBaseUrl, type Config } from "../../config.ts";
import { LocalPayments } from "./local.ts";
import type { PaymentsProvider } from "./types.ts";

export type { PaymentsProvider } from "./types.ts";

/** Stripe when `STRIPE_SECRET_KEY` is set; otherwise the offline provider with its local checkout page. */
export async function createPayments(config: Config, knex: Knex): Promise<PaymentsProvider> {
  // Read when a link is made, not now: with PORT=0 the runtime learns its address after start-up.
  const base = () => publicBaseUrl(config);
  const returnUrl = () => config.billing.redirectOrigins[0] ?? base();
  if (config.billing.stripeSecretKey) {
    const { StripePayments } = await import("./stripe.ts");
    return new StripePayments({
      secretKey: config.billing.stripeSecretKey,
      webhookSecret: config.billing.stripeWebhookSecret,
      apiUrl: config.billing.stripeApiUrl,
      portalReturnUrl: returnUrl(),
    });
  }
  return new LocalPayments(knex, {
    checkout: (id) => `${base()}/v1/billing/local-checkout/${encodeURIComponent(id)}`,
    portal: returnUrl(),
  });
}
