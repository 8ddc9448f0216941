import { Webhook } from "standardwebhooks";
import { beforeAll, describe, expect, it } from "vitest";
import { signatureHeaders } from "../../server/areas/webhooks/signing.ts";
import { generateSecret } from "../../server/areas/webhooks/secrets.ts";
import { createClient, NotFoundError, verifyWebhook, WebhookVerificationError } from "../../sdk/src/index.ts";
import { eventually } from "../support/wait.ts";
import type { TestService } from "../support/service.ts";
import { apiKeyFor, registerUser } from "../support/users.ts";
import { emit, useWebhookService } from "./helpers.ts";
import type { Receiver } from "./receiver.ts";

describe("verifyWebhook", () => {
  const body = JSON.stringify({ id: "0193a9f0-8b1c-7d2e-a3f4-5b6c7d8e9f01", type: "message.created", created_at: "2026-11-22T09:14:03Z", data: { n: 1 } });

  it("accepts what the service signs, with a generated and with a chosen secret, as Headers or a plain object", async () => {
    for (const secret of [generateSecret(), "a chosen secret of mine"]) {
      const headers = signatureHeaders(secret, "0193a9f0-8b1c-7d2e-a3f4-5b6c7d8e9f01", body, new Date());
      expect(await verifyWebhook(body, headers, secret)).toEqual(JSON.parse(body));
      expect(await verifyWebhook(new TextEncoder().encode(body), new Headers(headers), secret)).toMatchObject({ type: "message.created" });
    }
  });

  it("agrees with the standardwebhooks library", async () => {
    const secret = generateSecret();
    const signer = new Webhook(secret);
    const at = new Date();
    const headers = { "webhook-id": "msg_1", "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": signer.sign("msg_1", at, body) };
    expect(await verifyWebhook(body, headers, secret)).toMatchObject({ data: { n: 1 } });
  });

  it("rejects a changed body, a wrong secret, a missing signature and a stale timestamp", async () => {
    const secret = generateSecret();
    const headers = signatureHeaders(secret, "e1", body, new Date());
    const fails = (promise: Promise<unknown>) => expect(promise).rejects.toBeInstanceOf(WebhookVerificationError);
    await fails(verifyWebhook(body.replace("1}", "2}"), headers, secret));
    await fails(verifyWebhook(body, headers, generateSecret()));
    await fails(verifyWebhook(body, {}, secret));
    await fails(verifyWebhook(body, { ...headers, "x-persona-signature": "0".repeat(64) }, secret));
    await fails(verifyWebhook(body, signatureHeaders(secret, "e1", body, new Date(Date.now() - 600_000)), secret));
    const { "x-persona-signature": _persona, ...standardOnly } = headers;
    expect(await verifyWebhook(body, standardOnly, secret)).toMatchObject({ type: "message.created" });
  });
});

describe("client.webhooks", () => {
  let service: TestService;
  let hook: Receiver;
  const fixture = useWebhookService();
  beforeAll(() => void ({ service, hook } = fixture));

  it("creates, lists, updates, pages deliveries, redelivers and deletes; a receiver verifies with verifyWebhook", async () => {
    const user = await registerUser(service);
    const client = createClient({ baseUrl: service.url, apiKey: await apiKeyFor(service, user) });
    const created = await client.webhooks.create({ url: hook.url, events: ["message.failed"] });
    expect((await client.webhooks.list()).data.map((w) => w.id)).toEqual([created.id]);
    expect(await client.webhooks.update(created.id, { events: ["message.failed", "message.created"] })).toMatchObject({ events: ["message.failed", "message.created"] });

    await emit(service, user, "message.failed");
    await eventually(async () => hook.received.length === 1);
    const [entry] = hook.received;
    expect(await verifyWebhook(entry!.raw, entry!.headers as Record<string, string>, created.secret)).toMatchObject({ type: "message.failed" });

    const delivered = await eventually(async () => {
      const all = [];
      for await (const delivery of client.webhooks.deliveries(created.id)) all.push(delivery);
      return all[0]?.status === "succeeded" && all;
    });
    const again = await client.webhooks.redeliver(created.id, delivered[0]!.id);
    expect(again).toMatchObject({ status: "pending", redelivery_of: delivered[0]!.id });
    await eventually(async () => hook.received.length === 2);

    expect(await client.webhooks.delete(created.id)).toEqual({ id: created.id, deleted: true });
    await expect(client.webhooks.delete(created.id)).rejects.toBeInstanceOf(NotFoundError);
  });
});
