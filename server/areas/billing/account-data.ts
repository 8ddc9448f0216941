import type { AccountDataSection } from "../../toolkit/account-data.ts";
import { paymentsOf } from "./events.ts";
import { billingRecordsOf, liveSubscriptionsOf } from "./store.ts";
import { toInvoice, toSubscription } from "./views.ts";

/**
 * Billing's part of the data export and of the account purge. The archive carries the account's
 * customer id, subscription and invoices; the service never holds payment-method details (they stay
 * at the provider). The purge first ends a live subscription at the provider, so a deleted account
 * is not charged again.
 */
export const billingAccountData: AccountDataSection[] = [
  {
    key: "billing",
    tables: ["billing_customers", "billing_subscriptions", "billing_invoices", "billing_duplicate_subscriptions"],
    async exportRows({ knex, userId }) {
      const { customers, subscriptions, invoices, duplicates } = await billingRecordsOf(knex, userId);
      return [
        ...customers.map((customer) => ({ record: "customer", ...customer })),
        ...subscriptions.map((row) => ({
          record: "subscription",
          ...toSubscription(row),
          provider: row.provider,
          scheduled_plan: row.scheduled_plan,
          scheduled_change_at: row.scheduled_change_at,
          ended_at: row.ended_at,
        })),
        ...invoices.map((row) => ({ record: "invoice", ...toInvoice(row), provider: row.provider, provider_invoice_id: row.provider_invoice_id })),
        // A second subscription that was cancelled and refunded (issue 31 M4).
        ...duplicates.map((row) => ({
          record: "duplicate_subscription",
          provider: row.provider,
          provider_subscription_id: row.provider_subscription_id,
          kept_subscription_id: row.kept_subscription_id,
          refunds: row.refunds,
          refunded_amount: Number(row.refunded_amount),
          currency: row.currency,
          cancelled_at: row.cancelled_at,
        })),
      ];
    },
    async beforePurge(services, userIds) {
      const provider = paymentsOf(services);
      for (const row of await liveSubscriptionsOf(services.db.knex, userIds)) {
        if (row.provider !== provider.kind) continue;
        try {
          await provider.cancelNow(row.provider_subscription_id, services.now());
        } catch (error) {
          services.log.error({ err: error, userId: row.user_id, subscription: row.provider_subscription_id }, "could not cancel a purged account's subscription at the payment provider");
        }
      }
    },
  },
  {
    key: "usage_counters",
    tables: ["usage_counters", "quota_leases"],
    withheld: "This period's message counter, which GET /v1/billing/usage reports, and the leases of messages being answered (minutes long).",
  },
  {
    key: "local_payments",
    tables: ["local_payment_objects"],
    withheld: "the offline payment provider's own records (what Stripe would hold); the billing part carries the same facts",
  },
];
