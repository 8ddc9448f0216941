import { archiveRows, type AccountDataSection } from "../../toolkit/account-data.ts";

export const webhookAccountData: AccountDataSection[] = [
  // Without their signing secrets.
  { key: "webhooks", tables: ["webhooks"], exportRows: ({ knex, userId }) => archiveRows(knex, "webhooks", "user_id", [userId]) },
  {
    key: "webhook_deliveries",
    tables: ["webhook_deliveries", "event_outbox"],
    withheld: "Delivery logs and pending events are operational records kept 30 days; the deliveries endpoint lists them.",
  },
];
