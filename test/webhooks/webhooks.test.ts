import { beforeAll, describe, expect, it } from "vitest";
import { archiveOf, purgeDeletedAccounts } from "../support/account-data.ts";
import { MAX_WEBHOOKS_PER_USER } from "../../server/areas/webhooks/service.ts";
import { expectError } from "../support/assertions.ts";
import { eventually } from "../support/wait.ts";
import { jsonHeaders, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";
import { createWebhook, deliveries, emit, useWebhookService } from "./helpers.ts";
import type { Receiver } from "./receiver.ts";

let service: TestService;
let hook: Receiver;

const fixture = useWebhookService();
beforeAll(() => void ({ service, hook } = fixture));

const send = (user: TestUser | Record<string, string>, method: string, path: string, body?: unknown) =>
  service.fetch(path, {
    method,
    headers: { ...jsonHeaders, ...("auth" in user ? (user.auth as Record<string, string>) : user) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

describe("registration", () => {
  it("creates, lists (without secrets, newest first), updates and deletes", async () => {
    const user = await registerUser(service);
    const first = await createWebhook(service, user, { url: hook.url, events: ["message.created"] });
    expect(first).toEqual({ id: expect.any(String), url: hook.url, events: ["message.created"], secret: expect.stringMatching(/^whsec_/), active: true, created_at: expect.any(String) });
    expect(Buffer.from(first.secret.slice(6), "base64")).toHaveLength(24);
    const second = await createWebhook(service, user, { url: `${hook.url}/2`, events: ["subscription.created", "subscription.cancelled"], secret: "s".repeat(16) });

    const list = await (await send(user, "GET", "/v1/webhooks")).json();
    expect(list.total).toBe(2);
    expect(list.data.map((item: { id: string }) => item.id)).toEqual([second.id, first.id]);
    for (const item of list.data) expect(Object.keys(item).sort()).toEqual(["active", "created_at", "events", "id", "url"]);

    const updated = await send(user, "PUT", `/v1/webhooks/${first.id}`, { events: ["message.created", "message.failed", "conversation.created"] });
    expect(updated.status).toBe(200);
    expect(await updated.json()).toEqual({ id: first.id, url: hook.url, events: ["message.created", "message.failed", "conversation.created"], active: true, created_at: first.created_at });
    const moved = await (await send(user, "PUT", `/v1/webhooks/${first.id}`, { url: `${hook.url}/moved` })).json();
    expect(moved).toMatchObject({ url: `${hook.url}/moved`, events: ["message.created", "message.failed", "conversation.created"] });
    const unchanged = await (await send(user, "PUT", `/v1/webhooks/${first.id}`, {})).json();
    expect(unchanged).toEqual(moved);
    const paused = await (await send(user, "PUT", `/v1/webhooks/${first.id}`, { active: false })).json();
    expect(paused.active).toBe(false);

    const deleted = await send(user, "DELETE", `/v1/webhooks/${first.id}`);
    expect(await deleted.json()).toEqual({ id: first.id, deleted: true });
    await expectError(await send(user, "DELETE", `/v1/webhooks/${first.id}`), 404, "not_found");
    expect((await (await send(user, "GET", "/v1/webhooks")).json()).total).toBe(1);
  });

  it("keeps the secret encrypted at rest", async () => {
    const user = await registerUser(service);
    const created = await createWebhook(service, user, { url: hook.url, events: ["message.created"] });
    const row = await service.services.db.knex("webhooks").where({ id: created.id }).first();
    expect(row.secret_encrypted).toMatch(/^v1\./);
    expect(JSON.stringify(row)).not.toContain(created.secret.slice(6));
  });

  it("refuses unknown event names, bad URLs and every limit of the contract with a 400, storing nothing", async () => {
    const ALL_EVENTS = ["message.created", "message.failed", "conversation.created", "subscription.created", "subscription.cancelled", "report.created", "content.taken_down", "account.suspended"];
    const user = await registerUser(service);
    const bad = [
      { url: hook.url, events: ["message.deleted"] },
      { url: hook.url, events: [] },
      { url: hook.url, events: ["message.created", "message.created"] },
      { url: hook.url, events: [...ALL_EVENTS, "message.created"] },
      { url: hook.url },
      { events: ["message.created"] },
      { url: "ftp://example.com/hook", events: ["message.created"] },
      { url: `https://example.com/${"a".repeat(2048)}`, events: ["message.created"] },
      { url: hook.url, events: ["message.created"], secret: "s".repeat(15) },
      { url: hook.url, events: ["message.created"], secret: "s".repeat(257) },
    ];
    for (const body of bad) await expectError(await send(user, "POST", "/v1/webhooks", body), 400, "invalid_request");
    expect((await (await send(user, "GET", "/v1/webhooks")).json()).total).toBe(0);

    // At the limits: every event type once, a 16- and a 256-character secret.
    await createWebhook(service, user, { url: hook.url, events: ALL_EVENTS, secret: "s".repeat(256) });
    const created = await createWebhook(service, user, { url: hook.url, events: ["message.created"], secret: "s".repeat(16) });
    for (const body of [{ events: ["nope"] }, { events: [] }, { url: "ftp://x.example" }, { active: "yes" }]) {
      await expectError(await send(user, "PUT", `/v1/webhooks/${created.id}`, body), 400, "invalid_request");
    }
    const row = await (await send(user, "GET", "/v1/webhooks")).json();
    expect(row.data[0]).toMatchObject({ id: created.id, url: hook.url, events: ["message.created"], active: true });
  });

  it("allows at most 20 webhooks per account (409)", async () => {
    const user = await registerUser(service);
    for (let n = 0; n < MAX_WEBHOOKS_PER_USER; n++) await createWebhook(service, user, { url: `${hook.url}/${n}`, events: ["message.created"] });
    await expectError(await send(user, "POST", "/v1/webhooks", { url: hook.url, events: ["message.created"] }), 409, "conflict");
  });

  it("answers 404 for another user's webhook and deliveries, and needs the admin scope", async () => {
    const [owner, other] = [await registerUser(service), await registerUser(service)];
    const created = await createWebhook(service, owner, { url: hook.url, events: ["message.failed"] });
    await emit(service, owner, "message.failed");
    const [delivery] = (await eventually(async () => (await deliveries(service, owner, created.id)).data.length === 1 && deliveries(service, owner, created.id))).data;

    await expectError(await send(other, "PUT", `/v1/webhooks/${created.id}`, { active: false }), 404, "not_found");
    await expectError(await send(other, "DELETE", `/v1/webhooks/${created.id}`), 404, "not_found");
    await expectError(await send(other, "GET", `/v1/webhooks/${created.id}/deliveries`), 404, "not_found");
    await expectError(await send(other, "POST", `/v1/webhooks/${created.id}/deliveries/${delivery!.id}/redeliver`), 404, "not_found");
    expect((await (await send(other, "GET", "/v1/webhooks")).json()).total).toBe(0);
    await expectError(await send(owner, "PUT", `/v1/webhooks/${crypto.randomUUID()}`, { active: false }), 404, "not_found");
    await expectError(await send(owner, "PUT", "/v1/webhooks/not-a-uuid", { active: false }), 400, "invalid_request");
    await expectError(await send(owner, "POST", `/v1/webhooks/${created.id}/deliveries/not-a-uuid/redeliver`), 400, "invalid_request");
    await expectError(await send(owner, "POST", `/v1/webhooks/${created.id}/deliveries/${crypto.randomUUID()}/redeliver`), 404, "not_found");

    await expectError(await service.fetch("/v1/webhooks"), 401, "unauthorized");
    const readKey = await apiKeyFor(service, owner, ["personas:read", "conversations:write"]);
    await expectError(await send({ "x-api-key": readKey }, "GET", "/v1/webhooks"), 403, "forbidden");
    const adminKey = await apiKeyFor(service, owner, ["admin"]);
    expect((await send({ "x-api-key": adminKey }, "GET", "/v1/webhooks")).status).toBe(200);
    expect((await (await send(owner, "GET", "/v1/webhooks")).json()).data[0].active).toBe(true);
  });
});

describe("the delivery log", () => {
  it("pages newest first within the contract's limits", async () => {
    const user = await registerUser(service);
    const created = await createWebhook(service, user, { url: hook.url, events: ["message.failed"] });
    for (let n = 0; n < 3; n++) await emit(service, user, "message.failed", { n });
    await eventually(async () => (await deliveries(service, user, created.id)).data.filter((d) => d.status === "succeeded").length === 3);
    const page = await deliveries(service, user, created.id, "?limit=2&offset=1");
    expect(page).toMatchObject({ total: 3, limit: 2, offset: 1 });
    expect(page.data).toHaveLength(2);
    const all = await deliveries(service, user, created.id, "?limit=100");
    expect(all.data.map((d) => d.id)).toEqual([...all.data.map((d) => d.id)].sort().reverse());
    for (const query of ["?limit=0", "?limit=101", "?offset=-1", "?limit=x"]) {
      await expectError(await send(user, "GET", `/v1/webhooks/${created.id}/deliveries${query}`), 400, "invalid_request");
    }
  });
});

describe("account data", () => {
  it("exports webhooks without their secret, and the purge removes webhooks and deliveries", async () => {
    const user = await registerUser(service);
    const created = await createWebhook(service, user, { url: hook.url, events: ["message.failed"] });
    await emit(service, user, "message.failed");
    await eventually(async () => (await deliveries(service, user, created.id)).data[0]?.status === "succeeded");
    const knex = service.services.db.knex;

    const archive = await archiveOf(service.services, user.id);
    expect(archive.webhooks).toHaveLength(1);
    expect(archive.webhooks[0]).toMatchObject({ id: created.id, url: hook.url, events: ["message.failed"], active: true });
    expect(JSON.stringify(archive)).not.toContain("secret");
    expect(JSON.stringify(archive)).not.toContain(created.secret);

    await knex("users").where({ id: user.id }).update({ deleted_at: new Date(Date.now() - 40 * 86_400_000) });
    await purgeDeletedAccounts(service.services);
    expect(await knex("webhooks").where({ user_id: user.id })).toEqual([]);
    expect(await knex("webhook_deliveries").where({ user_id: user.id })).toEqual([]);
  });

  it("purges deliveries older than 30 days with the scheduled job", async () => {
    const user = await registerUser(service);
    const created = await createWebhook(service, user, { url: hook.url, events: ["message.failed"] });
    await emit(service, user, "message.failed");
    await emit(service, user, "message.failed");
    await eventually(async () => (await deliveries(service, user, created.id)).data.filter((d) => d.status === "succeeded").length === 2);
    const knex = service.services.db.knex;
    const [old] = (await deliveries(service, user, created.id)).data;
    await knex("webhook_deliveries").where({ id: old!.id }).update({ created_at: new Date(Date.now() - 31 * 86_400_000) });
    await service.services.jobs.add("webhooks_purge", {});
    await eventually(async () => (await deliveries(service, user, created.id)).total === 1);
  });
});
