import type { APIPromise } from "../api-promise.ts";
import { init, unwrap } from "../core.ts";
import { GeneratedBilling } from "../generated/resources.ts";
import type { RequestBody, RequestOptions, ResponseOf } from "../types.ts";

/**
 * Billing: the account's paid plan, bought through a payment page (Stripe, or the server's local
 * checkout page when it has no payment provider), its invoices and its usage against the plan.
 *
 * @example
 * const { checkout_url } = await client.billing.checkout({ plan: "plus", interval: "month", success_url: "https://app.example.com/ok", cancel_url: "https://app.example.com/back" });
 * // send the browser to checkout_url; after payment:
 * const subscription = await client.billing.subscription();
 */
export class Billing extends GeneratedBilling {
  /**
   * Moves to another paid plan: an upgrade applies at once (the answer carries the prorated amount),
   * a downgrade at the period end (`scheduled_change_at`; {@link GeneratedBilling.subscription} shows it as
   * `pending_plan` until then). Asking for the current plan drops a pending downgrade. Takes the plan
   * alone, the body's only field.
   * @example
   * const change = await client.billing.changePlan("pro");
   * console.log(change.proration_amount / 100, change.proration_currency);
   */
  changePlan(plan: RequestBody<"billing_change_plan">["plan"], options?: RequestOptions): APIPromise<ResponseOf<"billing_change_plan">> {
    return unwrap(this.core.raw.PUT("/v1/billing/subscription", { body: { plan }, ...init(options) }));
  }
}
