import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { purgeDeletedAccounts } from "../support/account-data.ts";
import { exportLinkKey, signExportLink } from "../../server/areas/auth/account/export-links.ts";
import { accountCrontab, accountTasks } from "../../server/areas/auth/account/jobs.ts";
import { accountDataSections } from "../../server/areas.ts";
import { nonCascadingUserReferences } from "../../server/areas/auth/users/store.ts";
import { sha256 } from "../../server/toolkit/tokens.ts";
import type { ApiAnswer } from "../support/api.ts";
import { outboxMails } from "../support/outbox.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";
import { until } from "../support/wait.ts";

const DAY = 24 * 60 * 60 * 1000;
const BASE = "https://persona.example";
let service: TestService;
let clock = new Date();

beforeAll(async () => {
  service = await startTestService({ now: () => clock, env: { PUBLIC_BASE_URL: BASE } });
});

afterAll(async () => {
  await service?.close();
});

afterEach(() => {
  clock = new Date();
});

const knex = () => service.services.db.knex;
const me = (headers: Record<string, string>) => service.fetch("/v1/auth/me", { headers });
const deleteMe = (headers: Record<string, string>) => service.fetch("/v1/auth/me", { method: "DELETE", headers });
const requestExport = (headers: Record<string, string>) => service.fetch("/v1/auth/export-data", { method: "POST", headers });

/** Asserts the status and error code of a raw response or of a typed-client answer. */
async function expectError(answer: Response | ApiAnswer, status: number, code: string) {
  const [actual, body] = answer instanceof Response ? [answer.status, await answer.json()] : [answer.response.status, answer.error ?? answer.data];
  expect(actual).toBe(status);
  expect(body.error.code).toBe(code);
}

/** The download link mailed for the user's export, waiting for the worker (polls every 100 ms in tests). */
async function mailedLink(user: TestUser, exportId: string): Promise<string> {
  const mail = await until(
    `a data_export mail for ${exportId}`,
    async () => (await outboxMails(service, { to: user.email, kind: "data_export" })).find((kept) => kept.text?.includes(exportId)),
    10_000,
  );
  const url = /https?:\/\/\S+\/download\?\S+/.exec(mail.text!)?.[0];
  expect(url).toBeDefined();
  return url!;
}

/** Requests an export and waits for its link; returns the path to fetch on the test service. */
async function exportOf(user: TestUser): Promise<{ exportId: string; path: string }> {
  const response = await requestExport(user.auth);
  expect(response.status).toBe(200);
  const { export_id: exportId } = await response.json();
  const url = await mailedLink(user, exportId);
  expect(url.startsWith(`${BASE}/v1/auth/export-data/${exportId}/download?`)).toBe(true);
  return { exportId, path: url.slice(BASE.length) };
}

describe("account deletion", () => {
  it("disables the account at once: token, refresh token, API key and password all stop working", async () => {
    const user = await registerUser(service);
    const other = await registerUser(service);
    const key = await apiKeyFor(service, user);
    expect((await me({ "x-api-key": key })).status).toBe(200);

    const response = await deleteMe(user.auth);
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body.deleted_at).toBe(clock.toISOString());
    expect(new Date(body.grace_period_ends).getTime() - new Date(body.deleted_at).getTime()).toBe(30 * DAY);
    expect(body.message).toEqual(expect.any(String));

    await expectError(await me(user.auth), 401, "unauthorized");
    await expectError(await me({ "x-api-key": key }), 401, "unauthorized");
    await expectError(await me({ authorization: `Bearer ${key}` }), 401, "unauthorized");
    await expectError(await service.api.POST("/v1/auth/refresh", { body: { refresh_token: user.refreshToken } }), 401, "unauthorized");
    // The password still opens nothing: a login is told the account is scheduled for deletion (issue 34).
    await expectError(await service.api.POST("/v1/auth/login", { body: { email: user.email, password: user.password } }), 403, "account_pending_deletion");
    await expectError(await deleteMe(user.auth), 401, "unauthorized");

    const sessions = await knex()("sessions").where({ user_id: user.id });
    expect(sessions.every((session) => session.revoked_at)).toBe(true);
    const keys = await knex()("api_keys").where({ user_id: user.id });
    expect(keys.every((row) => row.revoked_at)).toBe(true);

    // Another user is untouched.
    expect((await me(other.auth)).status).toBe(200);
  });

  it("needs credentials with the admin scope", async () => {
    await expectError(await deleteMe({}), 401, "unauthorized");
    const user = await registerUser(service);
    const readKey = await apiKeyFor(service, user, ["personas:read"]);
    await expectError(await deleteMe({ "x-api-key": readKey }), 403, "forbidden");
    expect((await me(user.auth)).status).toBe(200);
  });

  it("works with an admin API key and the account's password", async () => {
    const user = await registerUser(service);
    const key = await apiKeyFor(service, user);
    // A key alone is no confirmation (issue 34; test/auth/account-restore.test.ts has the rules).
    await expectError(await deleteMe({ "x-api-key": key }), 400, "invalid_request");
    expect((await me(user.auth)).status).toBe(200);
    const confirmed = await service.clientFor({ auth: { "x-api-key": key } }).DELETE("/v1/auth/me", { body: { password: user.password } });
    expect(confirmed.response.status).toBe(200);
    await expectError(await me(user.auth), 401, "unauthorized");
  });

  it("purges the account after 30 days, not before, with everything that references it", async () => {
    const start = new Date();
    clock = start;
    const user = await registerUser(service);
    const other = await registerUser(service);
    await apiKeyFor(service, user);
    await apiKeyFor(service, other);
    await knex()("data_exports").insert({ id: crypto.randomUUID(), user_id: user.id, status: "processing", requested_at: start });
    expect((await deleteMe(user.auth)).status).toBe(200);

    clock = new Date(start.getTime() + 29 * DAY);
    await purgeDeletedAccounts(service.services);
    expect(await knex()("users").where({ id: user.id }).first()).toBeDefined();

    clock = new Date(start.getTime() + 30 * DAY - 1000);
    await purgeDeletedAccounts(service.services);
    expect(await knex()("users").where({ id: user.id }).first()).toBeDefined();

    clock = new Date(start.getTime() + 31 * DAY);
    await purgeDeletedAccounts(service.services);
    expect(await knex()("users").where({ id: user.id }).first()).toBeUndefined();
    for (const table of ["sessions", "api_keys", "data_exports"]) {
      expect(await knex()(table).where({ user_id: user.id })).toEqual([]);
    }
    expect(await knex()("users").where({ id: other.id }).first()).toBeDefined();
    expect(await knex()("api_keys").where({ user_id: other.id })).toHaveLength(1);
    expect(await knex()("sessions").where({ user_id: other.id })).toHaveLength(1);
  });

  it("runs the purge as a daily job, and every table referencing users cascades", async () => {
    expect(accountCrontab).toContain("0 3 * * * account_purge");
    const tasks = accountTasks(service.services, accountDataSections);
    expect(Object.keys(tasks).sort()).toEqual(["account_purge", "data_export"]);
    expect(await nonCascadingUserReferences(knex())).toEqual([]);
  });
});

describe("data export", () => {
  it("builds the archive on the worker and mails a signed link to it", async () => {
    const user = await registerUser(service);
    const other = await registerUser(service);
    const key = await apiKeyFor(service, user);
    const otherKey = await apiKeyFor(service, other);

    const response = await requestExport(user.auth);
    expect(response.status).toBe(200);
    const started = await response.json();
    expect(started).toMatchObject({ status: "processing", requested_at: clock.toISOString() });
    expect(started.message).toMatch(/e-mail/);

    const url = await mailedLink(user, started.export_id);
    const path = url.slice(BASE.length);
    expect(new URL(url).searchParams.get("signature")).toMatch(/^[0-9a-f]{64}$/);
    const row = await knex()("data_exports").where({ id: started.export_id }).first();
    expect(row.status).toBe("ready");
    expect(row.completed_at).toBeInstanceOf(Date);
    const expires = Number(new URL(url).searchParams.get("expires"));
    expect(expires * 1000 - row.completed_at.getTime()).toBeGreaterThan(7 * DAY - 2000);
    expect(expires * 1000 - row.completed_at.getTime()).toBeLessThanOrEqual(7 * DAY);

    // Credential-free: the signed link is the authorization.
    const download = await service.fetch(path);
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toMatch(/^application\/json/);
    expect(download.headers.get("content-disposition")).toMatch(/^attachment; filename="persona-export-\d{4}-\d{2}-\d{2}\.json"$/);
    const text = await download.text();
    const archive = JSON.parse(text);
    expect(archive.format_version).toBe(1);
    expect(archive.user).toMatchObject({ id: user.id, email: user.email, username: user.username, email_verified: false, plan: "free" });
    for (const part of ["personas", "conversations", "knowledge_documents", "instruction_versions", "ratings", "follows", "likes", "rooms", "webhooks", "integrations"]) {
      expect(Array.isArray(archive[part])).toBe(true);
    }
    expect(archive.api_keys).toHaveLength(1);
    expect(archive.api_keys[0]).toMatchObject({ user_id: user.id, key_hint: expect.stringMatching(/^pk_/) });

    // No credential of any kind, and nothing of the other user.
    const password = await knex()("users").where({ id: user.id }).first();
    for (const secret of ["password_hash", "key_hash", "$argon2", password.password_hash, sha256(key), key, user.password, user.refreshToken]) {
      expect(text).not.toContain(secret);
    }
    for (const foreign of [other.id, other.email, other.username, sha256(otherKey), otherKey]) {
      expect(text).not.toContain(foreign);
    }
  });

  it("answers the export already processing, and starts a new one once it is done", async () => {
    const user = await registerUser(service);
    const [first, second] = await Promise.all([requestExport(user.auth), requestExport(user.auth)]);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    const a = await first.json();
    const b = await second.json();
    expect(b.export_id).toBe(a.export_id);
    expect(b.requested_at).toBe(a.requested_at);
    await mailedLink(user, a.export_id);

    const again = await requestExport(user.auth);
    const c = await again.json();
    expect(c.export_id).not.toBe(a.export_id);
    expect(c.status).toBe("processing");
    await mailedLink(user, c.export_id);
  });

  it("refuses a tampered, expired or malformed link, and 404s an unknown export", async () => {
    const user = await registerUser(service);
    const { exportId, path } = await exportOf(user);
    const url = new URL(path, service.url);
    const expires = Number(url.searchParams.get("expires"));
    const signature = url.searchParams.get("signature")!;
    const link = (id: string, exp: number | string, sig: string) =>
      service.fetch(`/v1/auth/export-data/${id}/download?expires=${exp}&signature=${sig}`);

    const flipped = (signature[0] === "0" ? "1" : "0") + signature.slice(1);
    await expectError(await link(exportId, expires, flipped), 403, "forbidden");
    await expectError(await link(exportId, expires + 3600, signature), 403, "forbidden");

    // The signature binds the export id: it opens no other export.
    const other = await registerUser(service);
    const { exportId: otherId } = await exportOf(other);
    await expectError(await link(otherId, expires, signature), 403, "forbidden");

    // Signed by us for an export that does not exist.
    const linkKey = await exportLinkKey(service.services);
    const unknown = "0193a6e1-5c2d-7f10-8a4b-3c9d2e1f0a77";
    await expectError(await link(unknown, expires, signExportLink(linkKey, unknown, expires)), 404, "not_found");

    await expectError(await link(exportId, expires, signature.slice(1)), 400, "invalid_request");
    await expectError(await link(exportId, expires, signature.toUpperCase()), 400, "invalid_request");
    await expectError(await link(exportId, "soon", signature), 400, "invalid_request");
    await expectError(await service.fetch(`/v1/auth/export-data/${exportId}/download?expires=${expires}`), 400, "invalid_request");

    // Valid until its expiry, void after: the link lives 7 days.
    clock = new Date(expires * 1000 - 1000);
    expect((await link(exportId, expires, signature)).status).toBe(200);
    clock = new Date(expires * 1000);
    await expectError(await link(exportId, expires, signature), 403, "forbidden");
    // An expiry already past, correctly signed, is refused too.
    clock = new Date();
    const past = Math.floor(Date.now() / 1000) - 1;
    await expectError(await link(exportId, past, signExportLink(linkKey, exportId, past)), 403, "forbidden");
  });

  it("serves a link to whoever holds it, but only the data of its own user", async () => {
    const alice = await registerUser(service);
    const bob = await registerUser(service);
    const aliceExport = await exportOf(alice);
    const bobExport = await exportOf(bob);
    // Bob holding Alice's link gets Alice's archive: the link itself is the authorization.
    const aliceArchive = await (await service.fetch(aliceExport.path, { headers: bob.auth })).json();
    const bobArchive = await (await service.fetch(bobExport.path)).json();
    expect(aliceArchive.user.id).toBe(alice.id);
    expect(bobArchive.user.id).toBe(bob.id);
    expect(JSON.stringify(aliceArchive)).not.toContain(bob.id);
    expect(JSON.stringify(bobArchive)).not.toContain(alice.id);
  });

  it("stops serving the archive once the account is deleted", async () => {
    const user = await registerUser(service);
    const { path } = await exportOf(user);
    expect((await service.fetch(path)).status).toBe(200);
    expect((await deleteMe(user.auth)).status).toBe(200);
    await expectError(await service.fetch(path), 404, "not_found");
  });

  it("needs credentials with the admin scope to request one", async () => {
    await expectError(await requestExport({}), 401, "unauthorized");
    const user = await registerUser(service);
    const chatKey = await apiKeyFor(service, user, ["chat"]);
    await expectError(await requestExport({ "x-api-key": chatKey }), 403, "forbidden");
    expect(await knex()("data_exports").where({ user_id: user.id })).toEqual([]);
  });
});
