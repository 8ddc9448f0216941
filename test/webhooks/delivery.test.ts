import { Webhook } from "standardwebhooks";
import { createHmac, timingSafeEqual } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { retryDelayMs } from "../../server/areas/webhooks/delivery.ts";
import { createConversation, createPersona, sendBlocking } from "../support/chat.ts";
import { eventually } from "../support/wait.ts";
import { contract } from "../support/contract.ts";
import { schemaErrors } from "../support/schema.ts";
import { outboxMails } from "../support/outbox.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser } from "../support/users.ts";
import { createWebhook, deliveries, emit, loopbackEnv, outboxIds } from "./helpers.ts";
import { startReceiver, type Receiver } from "./receiver.ts";

let service: TestService;

beforeAll(async () => {
  service = await startTestService({ env: loopbackEnv });
});
afterAll(async () => {
  await service?.close();
});

const receivers: Receiver[] = [];
afterAll(async () => {
  await Promise.all(receivers.map((receiver) => receiver.close()));
});
async function receiver(...args: Parameters<typeof startReceiver>) {
  const started = await startReceiver(...args);
  receivers.push(started);
  return started;
}

describe("delivery", () => {
  it("POSTs {id, type, created_at, data} signed with X-Persona-Signature and the Standard Webhooks headers", async () => {
    const user = await registerUser(service);
    const hook = await receiver();
    const webhook = await createWebhook(service, user, { url: hook.url, events: ["message.created", "conversation.created"] });
    expect(webhook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);

    const persona = await createPersona(service, user);
    const conversation = await createConversation(service, user, persona.id);
    expect((await sendBlocking(service, user, conversation.id, "Hello there")).status).toBe(201);
    // At-least-once: an attempt that outlived the delivery timeout on a busy machine is sent again
    // with the same id, so the events are counted by id.
    const distinct = () => [...new Map(hook.received.map((entry) => [JSON.parse(entry.raw).id as string, JSON.parse(entry.raw)])).values()];
    await eventually(async () => distinct().length >= 3);

    const bodies = distinct();
    expect(bodies.map((body) => body.type).sort()).toEqual(["conversation.created", "message.created", "message.created"]);
    const userMessage = bodies.find((body) => body.type === "message.created" && body.data.role === "user");
    expect(userMessage).toEqual({
      id: expect.any(String),
      type: "message.created",
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      // The first message follows the conversation's greeting (which has no event of its own).
      data: { conversation_id: conversation.id, message_id: expect.any(String), role: "user", content: "Hello there", persona_id: persona.id, parent_id: conversation.active_message_id },
    });
    const standard = new Webhook(webhook.secret);
    for (const entry of hook.received) {
      // The receiver's own digest of the raw body, compared in constant time.
      const expected = createHmac("sha256", webhook.secret).update(entry.raw).digest("hex");
      const given = String(entry.headers["x-persona-signature"]);
      expect(given).toMatch(/^[0-9a-f]{64}$/);
      expect(timingSafeEqual(Buffer.from(given), Buffer.from(expected))).toBe(true);
      expect(standard.verify(entry.raw, entry.headers as Record<string, string>)).toEqual(JSON.parse(entry.raw));
      expect(entry.headers["webhook-id"]).toBe(JSON.parse(entry.raw).id);
      expect(() => new Webhook(`whsec_${Buffer.from("another secret of enough bytes").toString("base64")}`).verify(entry.raw, entry.headers as Record<string, string>)).toThrow();
    }
    // Each message.created body is exactly what the contract declares: valid, and no undeclared field.
    const declared = contract.components.schemas.MessageCreatedEventData!;
    for (const body of bodies.filter((each) => each.type === "message.created")) {
      expect(schemaErrors(declared, body.data)).toEqual([]);
      expect(Object.keys(body.data).filter((field) => !(field in (declared.properties as object)))).toEqual([]);
    }
    const ids = new Set(await outboxIds(service, user, "message.created"));
    expect(bodies.filter((body) => body.type === "message.created").every((body) => ids.has(body.id))).toBe(true);

    const log = await deliveries(service, user, webhook.id);
    expect(log.total).toBe(3);
    // One attempt on a quiet machine; a second when the first outlived the 1 s timeout (see above).
    for (const entry of log.data) expect(entry).toMatchObject({ status: "succeeded", attempts: expect.any(Number), response_status: 200, error: null });
    for (const entry of log.data) expect(entry.attempts).toBeGreaterThanOrEqual(1);
  });

  it("signs with a secret the caller chose; Standard Webhooks verifies it in raw form", async () => {
    const user = await registerUser(service);
    const hook = await receiver();
    const secret = "my-own-secret-0123456789";
    const webhook = await createWebhook(service, user, { url: hook.url, events: ["message.failed"], secret });
    expect(webhook.secret).toBe(secret);
    await emit(service, user, "message.failed", { code: "upstream_error" });
    await eventually(async () => hook.received.length === 1);
    const [entry] = hook.received;
    expect(entry!.headers["x-persona-signature"]).toBe(createHmac("sha256", secret).update(entry!.raw).digest("hex"));
    expect(new Webhook(secret, { format: "raw" }).verify(entry!.raw, entry!.headers as Record<string, string>)).toMatchObject({ type: "message.failed" });
  });

  it("delivers only the subscribed types, only to the event's owner, and not to an inactive webhook", async () => {
    const [owner, other] = [await registerUser(service), await registerUser(service)];
    const mine = await receiver();
    const theirs = await receiver();
    const paused = await receiver();
    await createWebhook(service, owner, { url: mine.url, events: ["conversation.created"] });
    await createWebhook(service, other, { url: theirs.url, events: ["conversation.created", "message.failed"] });
    const off = await createWebhook(service, owner, { url: paused.url, events: ["message.failed"] });
    await service.clientFor(owner).PUT("/v1/webhooks/{id}", { params: { path: { id: off.id } }, body: { active: false } });
    await emit(service, owner, "message.failed");
    await emit(service, owner, "conversation.created");
    await eventually(async () => mine.received.length === 1);
    // The owner's conversation.created came after the message.failed: by now that one was fanned out too.
    await eventually(async () => (await service.services.db.knex("event_outbox").where({ user_id: owner.id }).whereNull("dispatched_at")).length === 0);
    expect(JSON.parse(mine.received[0]!.raw).type).toBe("conversation.created");
    expect(theirs.received).toHaveLength(0);
    expect(paused.received).toHaveLength(0);
  });

  it("retries a receiver answering 500 three times with the same event id, then marks the delivery failed", async () => {
    const user = await registerUser(service);
    const hook = await receiver(() => ({ status: 500 }));
    const webhook = await createWebhook(service, user, { url: hook.url, events: ["message.failed"] });
    await emit(service, user, "message.failed");
    const log = await eventually(async () => {
      const page = await deliveries(service, user, webhook.id);
      return page.data[0]?.status === "failed" && page;
    });
    expect(log.data[0]).toMatchObject({ attempts: 4, response_status: 500, error: "answered 500" });
    expect(hook.received).toHaveLength(4);
    expect(new Set(hook.received.map((entry) => entry.headers["webhook-id"])).size).toBe(1);
    expect(new Set(hook.received.map((entry) => entry.raw)).size).toBe(1);
    const row = await service.services.db.knex("webhooks").where({ id: webhook.id }).first();
    expect(row).toMatchObject({ consecutive_failures: 1, active: true });
  });

  it("times a slow receiver out (6 s against a 1 s limit here) and retries it; a later quick answer succeeds", async () => {
    const user = await registerUser(service);
    let calls = 0;
    const hook = await receiver(() => (++calls === 1 ? { status: 200, delayMs: 6_000 } : { status: 204 }));
    const webhook = await createWebhook(service, user, { url: hook.url, events: ["message.failed"] });
    await emit(service, user, "message.failed");
    const log = await eventually(async () => {
      const page = await deliveries(service, user, webhook.id);
      return page.data[0]?.status === "succeeded" && page;
    });
    expect(log.data[0]).toMatchObject({ attempts: 2, response_status: 204, error: null });
    expect(hook.received).toHaveLength(2);
  });

  it("does not follow a redirect: a 3xx is a failed attempt and the target is never called", async () => {
    const user = await registerUser(service);
    const target = await receiver();
    const hook = await receiver(() => ({ status: 302, headers: { location: target.url } }));
    const webhook = await createWebhook(service, user, { url: hook.url, events: ["message.failed"] });
    await emit(service, user, "message.failed");
    const log = await eventually(async () => {
      const page = await deliveries(service, user, webhook.id);
      return page.data[0]?.status === "failed" && page;
    });
    expect(log.data[0]).toMatchObject({ attempts: 4, response_status: 302, error: "redirect (302) not followed" });
    expect(target.received).toHaveLength(0);
  });

  it("retries a receiver that is down and logs why", async () => {
    const user = await registerUser(service);
    const gone = await startReceiver();
    await gone.close();
    const webhook = await createWebhook(service, user, { url: gone.url, events: ["message.failed"] });
    await emit(service, user, "message.failed");
    const log = await eventually(async () => {
      const page = await deliveries(service, user, webhook.id);
      return page.data[0]?.status === "failed" && page;
    });
    expect(log.data[0]).toMatchObject({ attempts: 4, response_status: null, latency_ms: expect.any(Number), error: "connection refused" });
  });

  it("redelivers a logged event as a new delivery with the same event id and body", async () => {
    const user = await registerUser(service);
    const hook = await receiver();
    const webhook = await createWebhook(service, user, { url: hook.url, events: ["message.failed"] });
    await emit(service, user, "message.failed");
    await eventually(async () => hook.received.length === 1);
    const [first] = (await eventually(async () => {
      const page = await deliveries(service, user, webhook.id);
      return page.data[0]?.status === "succeeded" && page;
    })).data;
    const { data: again, response } = await service.clientFor(user).POST("/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver", { params: { path: { id: webhook.id, delivery_id: first!.id } } });
    expect(response.status).toBe(202);
    expect(again).toMatchObject({ status: "pending", attempts: 0, event_id: first!.event_id, redelivery_of: first!.id });
    await eventually(async () => hook.received.length === 2);
    expect(hook.received[1]!.raw).toBe(hook.received[0]!.raw);
    expect(hook.received[1]!.headers["webhook-id"]).toBe(first!.event_id);
    const log = await eventually(async () => {
      const page = await deliveries(service, user, webhook.id);
      return page.data.every((entry) => entry.status === "succeeded") && page;
    });
    expect(log.total).toBe(2);
    expect(log.data[0]!.id).toBe(again!.id);
  });

  it("disables a webhook after 100 consecutive failed deliveries, records an event and e-mails the owner; active:true turns it back on", async () => {
    const user = await registerUser(service);
    const hook = await receiver(() => ({ status: 503 }));
    const webhook = await createWebhook(service, user, { url: hook.url, events: ["message.failed"] });
    // 99 failures already counted; the next failed delivery is the hundredth.
    await service.services.db.knex("webhooks").where({ id: webhook.id }).update({ consecutive_failures: 99 });
    await emit(service, user, "message.failed");
    const row = await eventually(async () => {
      const found = await service.services.db.knex("webhooks").where({ id: webhook.id }).first();
      return !found.active && found;
    });
    expect(row.consecutive_failures).toBe(100);
    const { data: listed } = await service.clientFor(user).GET("/v1/webhooks");
    expect(listed!.data[0]).toMatchObject({ id: webhook.id, active: false });
    const events = await service.services.db.knex("event_outbox").where({ user_id: user.id, type: "webhook.disabled" });
    expect(events).toHaveLength(1);
    expect(events[0].data).toMatchObject({ webhook_id: webhook.id, consecutive_failures: 100 });
    const mail = await eventually(async () => (await outboxMails(service, { to: user.email, kind: "webhook_disabled" }))[0]);
    expect(mail.text).toContain(webhook.id);

    // Disabled: events are not delivered, and a redelivery is refused.
    const before = hook.received.length;
    await emit(service, user, "message.failed");
    const [failed] = (await deliveries(service, user, webhook.id)).data;
    const refused = await service.clientFor(user).POST("/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver", { params: { path: { id: webhook.id, delivery_id: failed!.id } } });
    expect(refused.response.status).toBe(409);

    hook.behave(() => ({ status: 200 }));
    const enabled = await service.clientFor(user).PUT("/v1/webhooks/{id}", { params: { path: { id: webhook.id } }, body: { active: true } });
    expect(enabled.data).toMatchObject({ id: webhook.id, active: true });
    expect((await service.services.db.knex("webhooks").where({ id: webhook.id }).first()).consecutive_failures).toBe(0);
    await emit(service, user, "message.failed");
    await eventually(async () => hook.received.length === before + 1);
  });
});

describe("the retry schedule", () => {
  it("waits base × 6^(n-1), ±25%: about 10 s, 1 min and 6 min by default", () => {
    expect([1, 2, 3].map((retry) => retryDelayMs(10_000, retry, () => 0.5))).toEqual([10_000, 60_000, 360_000]);
    expect(retryDelayMs(10_000, 1, () => 0)).toBe(7_500);
    expect(retryDelayMs(10_000, 3, () => 1)).toBe(450_000);
  });
});
