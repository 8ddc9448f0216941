import { afterAll, beforeAll, expect } from "vitest";
import { recordEvent, type EventType } from "../../server/toolkit/events/outbox.ts";
import { jsonHeaders, startTestService, type TestService } from "../support/service.ts";
import type { TestUser } from "../support/users.ts";
import { startReceiver, type Receiver } from "./receiver.ts";

/** Settings of a service that delivers to loopback receivers quickly. */
export const loopbackEnv = { WEBHOOKS_ALLOW_PRIVATE_URLS: "true", WEBHOOKS_TIMEOUT_MS: "1000", WEBHOOKS_RETRY_BASE_MS: "50" };

/** A service that may deliver to loopback, and a receiver there, for the tests of the enclosing block. */
export function useWebhookService(): { service: TestService; hook: Receiver } {
  const fixture = {} as { service: TestService; hook: Receiver };
  beforeAll(async () => {
    fixture.service = await startTestService({ env: loopbackEnv });
    fixture.hook = await startReceiver();
  });
  afterAll(async () => {
    await fixture.hook?.close();
    await fixture.service?.close();
  });
  return fixture;
}

export async function createWebhook(service: TestService, user: TestUser, body: Record<string, unknown>) {
  const response = await service.fetch("/v1/webhooks", { method: "POST", headers: { ...jsonHeaders, ...user.auth }, body: JSON.stringify(body) });
  const json = await response.json();
  expect(response.status, JSON.stringify(json)).toBe(201);
  return json as { id: string; url: string; events: string[]; secret: string; active: true; created_at: string };
}

export async function deliveries(service: TestService, user: TestUser, webhookId: string, query = "") {
  const response = await service.fetch(`/v1/webhooks/${webhookId}/deliveries${query}`, { headers: user.auth });
  expect(response.status).toBe(200);
  return (await response.json()) as {
    data: { id: string; event_id: string; status: string; attempts: number; response_status: number | null; latency_ms: number | null; error: string | null; redelivery_of: string | null }[];
    total: number;
  };
}

/** Records an outbox event as the areas do, in its own statement. */
export async function emit(service: TestService, user: TestUser, type: EventType, data: Record<string, unknown> = { n: 1 }) {
  await recordEvent(service.services.db.knex, { userId: user.id, type, data, at: new Date() });
}

export async function outboxIds(service: TestService, user: TestUser, type: EventType): Promise<string[]> {
  const rows = await service.services.db.knex("event_outbox").where({ user_id: user.id, type }).orderBy("created_at").select("id");
  return rows.map((row: { id: string }) => row.id);
}
