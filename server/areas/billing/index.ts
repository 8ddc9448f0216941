// The billing area's public surface: plans bought through Stripe or the local checkout. Plan
// limits and usage counting live below the areas, in server/quota/.
import { defineArea } from "../../toolkit/area.ts";
import { billingAccountData } from "./account-data.ts";
import { handlers } from "./handlers.ts";
import { billingCrontab, billingTasks } from "./jobs.ts";

export const area = defineArea({
  name: "billing",
  handlers,
  tasks: billingTasks,
  crontab: billingCrontab,
  accountData: billingAccountData,
  tables: ["billing_customers", "billing_subscriptions", "billing_invoices", "billing_events", "billing_duplicate_subscriptions"],
});
