import type { AccountDataSection } from "../../toolkit/account-data.ts";
import { disconnect } from "./service.ts";
import { channelsOfIntegrations, deleteIntegrations, listIntegrationsOf, listIntegrationsOfUsers } from "./store.ts";

/**
 * Integrations in the data export (never the bot token or the webhook secret) and in the purge:
 * before the accounts' rows go, each messenger bot's webhook is removed at the platform and the
 * integrations are deleted, so the worker holding a forum bot's gateway connection closes it at its
 * next lease round.
 */
export const integrationsAccountData: AccountDataSection[] = [
  {
    key: "integrations",
    tables: ["integrations", "integration_channels"],
    async exportRows({ knex, userId }) {
      const rows = await listIntegrationsOf(knex, userId);
      const channels = await channelsOfIntegrations(knex, rows.map((row) => row.id));
      return rows.map((row) => ({
        id: row.id,
        platform: row.platform,
        persona_id: row.persona_id,
        status: row.status,
        guild_id: row.guild_id,
        workspace_id: row.workspace_id,
        channel_ids: row.channel_ids,
        auto_respond: row.auto_respond,
        bot_user_id: row.bot_user_id,
        bot_username: row.bot_username,
        message_count: row.message_count,
        last_message_at: row.last_message_at?.toISOString() ?? null,
        last_error: row.last_error,
        connected_at: row.connected_at.toISOString(),
        channels: channels
          .filter((channel) => channel.integration_id === row.id)
          .map((channel) => ({ channel_id: channel.channel_key, conversation_id: channel.conversation_id, created_at: channel.created_at.toISOString() })),
      }));
    },
    async beforePurge(services, userIds) {
      const rows = await listIntegrationsOfUsers(services.db.knex, userIds);
      for (const row of rows) await disconnect(services, row);
      await deleteIntegrations(services.db.knex, rows.map((row) => row.id));
    },
  },
  {
    key: "integration_runtime",
    tables: ["integration_events", "integration_leases"],
    withheld: "platform event ids kept to drop retried callbacks, and the worker leases on gateway connections: bookkeeping, not the user's data",
  },
];
