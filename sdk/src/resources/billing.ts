import type { APIPromise } from "../api-promise.ts";
import { init, list, unwrap, type Core } from "../core.ts";
import type { PageIterator } from "../pagination.ts";
import type { QueryOf, RequestBody, RequestOptions, ResponseOf, Schemas } from "../types.ts";

/**
 * Billing: the account's paid plan, bought through a payment page (Stripe, or the server's local
 * checkout page when it has no payment provider), its invoices and its usage against the plan.
 *
 * @example
 * const { checkout_url } = await client.billing.checkout({ plan: "plus", interval: "month", success_url: "https://app.example.com/ok", cancel_url: "https://app.example.com/back" });
 * // send the browser to checkout_url; after payment:
 * const subscription = await client.billing.subscription();
 */
export class Billing {
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
  }

  /**
   * Starts buying a paid plan; answers the payment page to send the browser to. A ConflictError when
   * the account already has one (change plans with {@link Billing.changePlan}).
   * @example
   * const { checkout_url } = await client.billing.checkout({ plan: "pro", interval: "year", success_url, cancel_url });
   */
  checkout(body: RequestBody<"billing_checkout">, options?: RequestOptions): APIPromise<ResponseOf<"billing_checkout">> {
    return unwrap(this.#core.raw.POST("/v1/billing/checkout", { body, ...init(options) }));
  }

  /**
   * The account's subscription (its plan is `free` once a cancellation took effect); a NotFoundError when it never subscribed.
   * A downgrade waiting for the period end is in `pending_plan` and `pending_change_at` (null when none is pending).
   * @example
   * const { plan, pending_plan, pending_change_at } = await client.billing.subscription();
   * if (pending_plan) console.log(`${plan} until ${pending_change_at}, then ${pending_plan}`);
   */
  subscription(options?: RequestOptions): APIPromise<ResponseOf<"billing_get_subscription">> {
    return unwrap(this.#core.raw.GET("/v1/billing/subscription", { ...init(options) }));
  }

  /**
   * Moves to another paid plan: an upgrade applies at once (the answer carries the prorated amount),
   * a downgrade at the period end (`scheduled_change_at`; {@link Billing.subscription} shows it as
   * `pending_plan` until then). Asking for the current plan drops a pending downgrade.
   * @example
   * const change = await client.billing.changePlan("pro");
   * console.log(change.proration_amount / 100, change.proration_currency);
   */
  changePlan(plan: RequestBody<"billing_change_plan">["plan"], options?: RequestOptions): APIPromise<ResponseOf<"billing_change_plan">> {
    return unwrap(this.#core.raw.PUT("/v1/billing/subscription", { body: { plan }, ...init(options) }));
  }

  /**
   * Cancels at the end of the current period; the plan stays until `cancel_at`.
   * @example
   * const { cancel_at } = await client.billing.cancel();
   */
  cancel(options?: RequestOptions): APIPromise<ResponseOf<"billing_cancel">> {
    return unwrap(this.#core.raw.DELETE("/v1/billing/subscription", { ...init(options) }));
  }

  /**
   * A short-lived link to the payment provider's customer portal (payment methods, billing details).
   * @example
   * const { portal_url } = await client.billing.portal();
   */
  portal(options?: RequestOptions): APIPromise<ResponseOf<"billing_portal">> {
    return unwrap(this.#core.raw.POST("/v1/billing/portal", { ...init(options) }));
  }

  /**
   * The account's invoices, newest first, page by page.
   * @example
   * for await (const invoice of client.billing.invoices()) console.log(invoice.number, invoice.amount / 100, invoice.invoice_pdf);
   */
  invoices(query: QueryOf<"billing_invoices"> = {}, options?: RequestOptions): PageIterator<Schemas["Invoice"], ResponseOf<"billing_invoices">> {
    return list((q) => this.#core.raw.GET("/v1/billing/invoices", { params: { query: q }, ...init(options) }), query);
  }

  /**
   * Messages this period, personas and knowledge documents against the plan's limits.
   * @example
   * const { usage } = await client.billing.usage();
   * console.log(`${usage.messages_sent} of ${usage.messages_limit} messages`);
   */
  usage(options?: RequestOptions): APIPromise<ResponseOf<"billing_usage">> {
    return unwrap(this.#core.raw.GET("/v1/billing/usage", { ...init(options) }));
  }
}
