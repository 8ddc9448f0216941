import type { components } from "../../../generated/openapi.d.ts";
import type { IntegrationRow } from "./store.ts";

// Integration rows as the contract shows them. The token and the webhook secret never leave.

type Schemas = components["schemas"];

export function toIntegration(row: IntegrationRow): Schemas["Integration"] {
  return {
    id: row.id,
    platform: row.platform,
    persona_id: row.persona_id,
    status: row.status,
    ...(row.guild_id !== null ? { guild_id: row.guild_id } : {}),
    ...(row.workspace_id !== null ? { workspace_id: row.workspace_id } : {}),
    ...(row.channel_ids !== null ? { channel_ids: row.channel_ids } : {}),
    message_count: row.message_count,
    connected_at: row.connected_at.toISOString(),
  };
}

export function toIntegrationDetail(row: IntegrationRow, eventsUrl: string | undefined): Schemas["IntegrationDetail"] {
  return {
    ...toIntegration(row),
    auto_respond: row.auto_respond,
    last_message_at: row.last_message_at?.toISOString() ?? null,
    ...(eventsUrl ? { events_url: eventsUrl } : {}),
    ...(row.last_error ? { last_error: row.last_error } : {}),
  };
}

export interface TestOutcome {
  success: boolean;
  latencyMs: number;
  messageId: string | null;
  deliveredAt: Date | null;
  error: string | null;
}

export function toTestResult(row: IntegrationRow, outcome: TestOutcome): Schemas["IntegrationTestResult"] {
  return {
    id: row.id,
    platform: row.platform,
    status: row.status,
    test_result: {
      success: outcome.success,
      latency_ms: outcome.latencyMs,
      message_id: outcome.messageId,
      delivered_at: outcome.deliveredAt?.toISOString() ?? null,
      error: outcome.error,
    },
  };
}
