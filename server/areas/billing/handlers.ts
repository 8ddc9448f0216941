import { internalError, invalidField, providerFailure } from "../../toolkit/http/error-catalogue.ts";
import { pageBody, pageWindow } from "../../toolkit/http/paging.ts";
import { HANDLED, type Handler, type HandlerMap } from "../../toolkit/http/router.ts";
import { rawBodyOf } from "../../toolkit/http/raw-body.ts";
import { PaymentSignatureError } from "../../toolkit/providers/payments/types.ts";
import { paymentsOf, processEvent } from "./events.ts";
import { checkoutPage, completeCheckout } from "./local-checkout.ts";
import { sendCheckoutPage } from "./page.ts";
import { cancelSubscription, changePlan, invoicesOf, openPortal, requireSubscription, startCheckout, usageOf } from "./service.ts";
import { toCancellation, toCheckoutSession, toInvoice, toSubscription, toSubscriptionChange, toUsage } from "./views.ts";

const billing_checkout: Handler<"billing_checkout"> = async ({ services, principal, body }) => ({
  status: 200,
  body: toCheckoutSession(await startCheckout(services, principal.userId, body)),
});

const billing_get_subscription: Handler<"billing_get_subscription"> = async ({ services, principal }) => ({
  status: 200,
  body: toSubscription(await requireSubscription(services, principal.userId)),
});

const billing_change_plan: Handler<"billing_change_plan"> = async ({ services, principal, body }) => ({
  status: 200,
  body: toSubscriptionChange(await changePlan(services, principal.userId, body.plan)),
});

const billing_cancel: Handler<"billing_cancel"> = async ({ services, principal }) => ({
  status: 200,
  body: toCancellation(await cancelSubscription(services, principal.userId)),
});

const billing_portal: Handler<"billing_portal"> = async ({ services, principal }) => {
  const link = await openPortal(services, principal.userId);
  return { status: 200, body: { portal_url: link.url, expires_at: link.expiresAt.toISOString() } };
};

const billing_invoices: Handler<"billing_invoices"> = async ({ services, principal, query }) => {
  const window = pageWindow(query);
  return { status: 200, body: pageBody(await invoicesOf(services, principal.userId, window), window, toInvoice) };
};

const billing_usage: Handler<"billing_usage"> = async ({ services, principal }) => ({
  status: 200,
  body: toUsage(await usageOf(services, principal.userId)),
});

const billing_provider_webhook: Handler<"billing_provider_webhook"> = async ({ services, req, log }) => {
  const raw = rawBodyOf(req);
  const signature = req.get("stripe-signature") ?? "";
  let event;
  try {
    if (!raw) throw new PaymentSignatureError("The body is missing");
    event = paymentsOf(services).verifyEvent(raw, signature, services.now());
  } catch (error) {
    if (!(error instanceof PaymentSignatureError)) throw error;
    throw invalidField("/header/stripe-signature", "does not verify", error.message);
  }
  try {
    const outcome = await processEvent(services, event);
    log.info({ event: event.id, type: event.type, outcome }, "payment provider event");
  } catch (error) {
    // Any answer but 2xx makes the provider send the event again later, which is what is wanted;
    // a 500 rather than the usual 502 says the failure is ours to retry, not the caller's.
    throw providerFailure(error, { upstream: (failure) => internalError(`The event could not be processed now: ${failure.message}`) });
  }
  return { status: 200, body: { received: true } };
};

const billing_local_checkout_page: Handler<"billing_local_checkout_page"> = async ({ services, params, res }) => {
  const { checkout, csrfToken } = await checkoutPage(services, params.session_id);
  sendCheckoutPage(res, checkout, csrfToken);
  return HANDLED;
};

const billing_local_checkout_complete: Handler<"billing_local_checkout_complete"> = async ({ services, params, body, res }) => {
  const location = await completeCheckout(services, params.session_id, body.action, body.csrf_token);
  res.status(303).set({ Location: location, "Cache-Control": "no-store", "Referrer-Policy": "no-referrer" }).end();
  return HANDLED;
};

export const handlers = {
  billing_checkout,
  billing_get_subscription,
  billing_change_plan,
  billing_cancel,
  billing_portal,
  billing_invoices,
  billing_usage,
  billing_provider_webhook,
  billing_local_checkout_page,
  billing_local_checkout_complete,
} satisfies Partial<HandlerMap>;
