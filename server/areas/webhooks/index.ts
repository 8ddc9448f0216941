// The webhooks area's public surface: endpoints, signed deliveries, and the secret box for secrets kept to sign with.
import { defineArea } from "../../toolkit/area.ts";
import { webhookAccountData } from "./account-data.ts";
import { handlers } from "./handlers.ts";
import { webhookCrontab, webhookTasks } from "./jobs.ts";

export { secretBox } from "./secrets.ts";

export const area = defineArea({ name: "webhooks", handlers, tasks: webhookTasks, crontab: webhookCrontab, accountData: webhookAccountData, tables: ["webhooks", "webhook_deliveries"] });
