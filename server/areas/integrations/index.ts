// The chat-platform integrations area's public surface: bots on Discord, Telegram and Slack.
import { defineArea } from "../../toolkit/area.ts";
import { integrationsAccountData } from "./account-data.ts";
import { startGateways } from "./gateway/supervisor.ts";
import { handlers } from "./handlers.ts";
import { integrationCrontab, integrationTasks } from "./jobs.ts";

export const area = defineArea({
  name: "integrations",
  handlers,
  tasks: integrationTasks,
  crontab: integrationCrontab,
  connections: startGateways,
  accountData: integrationsAccountData,
  tables: ["integrations", "integration_leases", "integration_events", "integration_channels"],
});
