import type { AccountDataSection } from "../account-data.ts";

export const billingAccountData: AccountDataSection[] = [
  { key: "usage_counters", tables: ["usage_counters"], withheld: "This period's message counter; GET /v1/billing/usage reports it." },
];
