import { randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { registerOAuthClient } from "../../server/areas/auth/oauth/clients.ts";
import { newApiKey, sha256 } from "../../server/toolkit/tokens.ts";
import { purgeDeletedAccounts } from "../support/account-data.ts";
import { expectApiError, expectError, expectOk } from "../support/assertions.ts";
import { sendRaw } from "../support/raw.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";

// Issue 34 item 8: an account deletion is confirmed (the password, or a login of the last 10
// minutes), a login during the grace period says the account is scheduled for deletion, the
// account can be restored until the grace period ends, and after the purge its e-mail is free.

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
let service: TestService;
let clock = new Date();

beforeAll(async () => {
  service = await startTestService({ now: () => clock });
});

afterAll(async () => {
  await service?.close();
});

afterEach(() => {
  clock = new Date();
});

const knex = () => service.services.db.knex;
const as = (headers: Record<string, string>) => service.clientFor({ auth: headers });
const keyed = (key: string) => as({ "x-api-key": key });
const me = (headers: Record<string, string>) => as(headers).GET("/v1/auth/me");
const login = (user: Pick<TestUser, "email" | "password">) => service.api.POST("/v1/auth/login", { body: { email: user.email, password: user.password } });
const restore = (user: Pick<TestUser, "email" | "password">) => service.api.POST("/v1/auth/me/restore", { body: { email: user.email, password: user.password } });
const isDeleted = async (user: TestUser) => (await knex()("users").where({ id: user.id }).first("deleted_at"))?.deleted_at !== null;

/** An API key of the user minted through an OAuth grant (a session of an OAuth client), and that grant's access token. */
async function oauthGrant(user: TestUser): Promise<{ key: string; token: string }> {
  const client = await registerOAuthClient(service.services, { name: "Restore test app", redirectUris: ["https://app.example.com/cb"] });
  const sessionId = randomUUID();
  await knex()("sessions").insert({ id: sessionId, user_id: user.id, client_id: client.client_id, scopes: ["admin"], created_at: clock });
  const { key, hint } = newApiKey();
  await knex()("api_keys").insert({ id: randomUUID(), user_id: user.id, name: "minted", key_hash: sha256(key), key_hint: hint, scopes: ["admin"], created_at: clock, grant_session_id: sessionId });
  const token = await service.services.tokens.sign({ sub: user.id, sid: sessionId, cid: client.client_id, scope: "admin" }, clock);
  return { key, token };
}

describe("confirming an account deletion", () => {
  it("needs no password within 10 minutes of the login, and the password after", async () => {
    const fresh = await registerUser(service);
    expect(await expectOk(as(fresh.auth).DELETE("/v1/auth/me"))).toMatchObject({ grace_period_ends: expect.any(String) });

    const user = await registerUser(service);
    clock = new Date(clock.getTime() + 10 * MINUTE + 1000);
    const refused = await expectApiError(as(user.auth).DELETE("/v1/auth/me"), 400, "invalid_request");
    expect(refused.error.details?.errors).toEqual([{ path: "/body/password", message: expect.stringContaining("is required") }]);
    expect(refused.error.message).toContain("password");
    await expectApiError(as(user.auth).DELETE("/v1/auth/me", { body: {} }), 400, "invalid_request");
    expect(await isDeleted(user)).toBe(false);

    // A login now is fresh again; so is the token it gives, whatever the old session's age.
    const again = await expectOk(login(user));
    const deleted = await expectOk(as({ authorization: `Bearer ${again.access_token}` }).DELETE("/v1/auth/me"));
    expect(deleted.deleted_at).toBe(clock.toISOString());
    expect(deleted.message).toContain("POST /v1/auth/me/restore");
    expect(await isDeleted(user)).toBe(true);
  });

  it("takes the password with any credential; a wrong one is 403 and deletes nothing", async () => {
    const user = await registerUser(service);
    clock = new Date(clock.getTime() + 60 * MINUTE - 1000);
    const wrong = await expectApiError(as(user.auth).DELETE("/v1/auth/me", { body: { password: "Not-the-password-1" } }), 403, "forbidden");
    expect(wrong.error.message).toMatch(/password is wrong/);
    expect(await isDeleted(user)).toBe(false);
    await expectOk(me(user.auth));
    await expectOk(as(user.auth).DELETE("/v1/auth/me", { body: { password: user.password } }));
    expect(await isDeleted(user)).toBe(true);
  });

  it("never lets an API key or an OAuth token delete without the password", async () => {
    const keyed1 = await registerUser(service);
    const key = await apiKeyFor(service, keyed1);
    await expectApiError(keyed(key).DELETE("/v1/auth/me"), 400, "invalid_request");
    await expectApiError(keyed(key).DELETE("/v1/auth/me", { body: { password: "Not-the-password-1" } }), 403, "forbidden");
    expect(await isDeleted(keyed1)).toBe(false);
    await expectOk(keyed(key).DELETE("/v1/auth/me", { body: { password: keyed1.password } }));
    expect(await isDeleted(keyed1)).toBe(true);

    // An OAuth app's token, fresh as it is, is not the person.
    const granted = await registerUser(service);
    const { token } = await oauthGrant(granted);
    await expectApiError(as({ authorization: `Bearer ${token}` }).DELETE("/v1/auth/me"), 400, "invalid_request");
    expect(await isDeleted(granted)).toBe(false);
    await expectOk(as({ authorization: `Bearer ${token}` }).DELETE("/v1/auth/me", { body: { password: granted.password } }));
    expect(await isDeleted(granted)).toBe(true);
  });

  it("refuses a key without the admin scope, no credentials and bad bodies, and deletes nothing", async () => {
    const user = await registerUser(service);
    const readKey = await apiKeyFor(service, user, ["personas:read"]);
    await expectApiError(keyed(readKey).DELETE("/v1/auth/me", { body: { password: user.password } }), 403, "forbidden");
    await expectApiError(service.api.DELETE("/v1/auth/me", { body: { password: user.password } }), 401, "unauthorized");
    for (const body of [{ password: "" }, { password: "x".repeat(129) }, { password: 12345678 }, { password: null }, "not json", []]) {
      await expectError(await sendRaw(service, "DELETE", "/v1/auth/me", { body, headers: user.auth }), 400, "invalid_request");
    }
    expect(await isDeleted(user)).toBe(false);
    await expectOk(me(user.auth));
  });
});

describe("logging in during the grace period", () => {
  it("says the account is scheduled for deletion, only to whoever has the password", async () => {
    const user = await registerUser(service);
    const deleted = await expectOk(as(user.auth).DELETE("/v1/auth/me"));

    const wrong = await expectApiError(login({ email: user.email, password: "Not-the-password-1" }), 401, "unauthorized");
    const unknown = await expectApiError(login({ email: `nobody_${randomUUID().slice(0, 8)}@example.com`, password: user.password }), 401, "unauthorized");
    expect(wrong.error).toEqual(unknown.error);

    const pending = await expectApiError(login(user), 403, "account_pending_deletion");
    expect(pending.error.message).toContain(deleted.grace_period_ends.slice(0, 10));
    expect(pending.error.message).toContain("POST /v1/auth/me/restore");
    expect(pending.error.details).toEqual({
      deleted_at: deleted.deleted_at,
      grace_period_ends: deleted.grace_period_ends,
      restorable: true,
      restore: "POST /v1/auth/me/restore",
    });
    // Case does not matter for the address, as in any login.
    await expectApiError(login({ email: user.email.toUpperCase(), password: user.password }), 403, "account_pending_deletion");
    // Nothing was issued.
    expect(await knex()("sessions").where({ user_id: user.id }).whereNull("revoked_at")).toEqual([]);
  });
});

describe("restoring a deleted account", () => {
  it("brings back the account, what it owns, and exactly the API keys its deletion revoked", async () => {
    const owner = await registerUser(service);
    const other = keyed(await apiKeyFor(service, await registerUser(service)));
    const client = as(owner.auth);
    const shown = await expectOk(client.POST("/v1/personas", { body: { name: "Lantern", instructions: "Be kind.", greeting_message: "Hi.", is_public: true } }), 201);
    const hidden = await expectOk(client.POST("/v1/personas", { body: { name: "Diary", instructions: "Be private.", greeting_message: "Hello." } }), 201);
    const conversation = await expectOk(client.POST("/v1/conversations", { body: { persona_id: hidden.id } }), 201);
    await expectOk(client.POST("/v1/conversations/{id}/messages", { params: { path: { id: conversation.id } }, body: { content: "Remember the lighthouse." } }), 201);
    const messagesBefore = await expectOk(client.GET("/v1/conversations/{id}/messages", { params: { path: { id: conversation.id } } }));
    await expectOk(other.POST("/v1/social/follow/{user_id}", { params: { path: { user_id: owner.id } } }));
    const followed = async () => (await expectOk(other.GET("/v1/social/following"))).data.map((entry) => entry.id);
    expect(await followed()).toEqual([owner.id]);
    const followersBefore = await expectOk(client.GET("/v1/social/followers"));

    const liveKey = await apiKeyFor(service, owner);
    const chatKey = await apiKeyFor(service, owner, ["chat"]);
    const revokedKey = await apiKeyFor(service, owner);
    const revokedId = (await knex()("api_keys").where({ key_hash: sha256(revokedKey) }).first("id")).id as string;
    await expectOk(client.DELETE("/v1/auth/api-keys/{id}", { params: { path: { id: revokedId } } }));
    const { key: mintedKey } = await oauthGrant(owner);

    await expectOk(client.DELETE("/v1/auth/me"));
    await expectApiError(other.GET("/v1/personas/{id}", { params: { path: { id: shown.id } } }), 404, "not_found");
    expect(await followed()).toEqual([]);
    await expectApiError(keyed(liveKey).GET("/v1/auth/me"), 401, "unauthorized");

    clock = new Date(clock.getTime() + 29 * DAY);
    const restored = await expectOk(restore(owner));
    expect(restored).toMatchObject({ message: "Account restored.", token_type: "Bearer", user: { id: owner.id, email: owner.email, username: owner.username }, restored: { api_keys: 2 } });
    expect(await isDeleted(owner)).toBe(false);

    // The answer is a login; the sessions the deletion ended stay ended.
    const session = { authorization: `Bearer ${restored.access_token}` };
    expect(await expectOk(me(session))).toMatchObject({ id: owner.id });
    await expectApiError(service.api.POST("/v1/auth/refresh", { body: { refresh_token: owner.refreshToken } }), 401, "unauthorized");
    expect((await expectOk(service.api.POST("/v1/auth/refresh", { body: { refresh_token: restored.refresh_token } }))).access_token).toEqual(expect.any(String));
    // The keys the deletion revoked work again; one revoked before, and one of an OAuth grant, do not.
    await expectOk(keyed(liveKey).GET("/v1/auth/me"));
    await expectOk(keyed(chatKey).GET("/v1/personas/{id}", { params: { path: { id: hidden.id } } }));
    await expectApiError(keyed(revokedKey).GET("/v1/auth/me"), 401, "unauthorized");
    await expectApiError(keyed(mintedKey).GET("/v1/auth/me"), 401, "unauthorized");
    const listed = await expectOk(as(session).GET("/v1/auth/api-keys"));
    expect(listed.data).toHaveLength(2);

    // What it owns is back: its public persona to others, its private things and messages to it, its followers.
    expect(await expectOk(other.GET("/v1/personas/{id}", { params: { path: { id: shown.id } } }))).toMatchObject({ id: shown.id });
    await expectApiError(other.GET("/v1/personas/{id}", { params: { path: { id: hidden.id } } }), 404, "not_found");
    expect(await expectOk(as(session).GET("/v1/conversations/{id}/messages", { params: { path: { id: conversation.id } } }))).toEqual(messagesBefore);
    expect(await expectOk(as(session).GET("/v1/social/followers"))).toEqual(followersBefore);
    expect(await followed()).toEqual([owner.id]);

    // Live again: a plain login works, and a second restore has nothing to do.
    await expectOk(login(owner));
    const twice = await expectApiError(restore(owner), 409, "conflict");
    expect(twice.error.message).toContain("not scheduled for deletion");
    // The purge no longer concerns it.
    clock = new Date(clock.getTime() + 31 * DAY);
    await purgeDeletedAccounts(service.services);
    expect(await knex()("users").where({ id: owner.id }).first()).toMatchObject({ deleted_at: null });
  });

  it("refuses a wrong password, an unknown e-mail and a live account, and restores nothing", async () => {
    const user = await registerUser(service);
    const live = await registerUser(service);
    await expectOk(as(user.auth).DELETE("/v1/auth/me"));

    const wrong = await expectApiError(restore({ email: user.email, password: "Not-the-password-1" }), 401, "unauthorized");
    expect(wrong.error.message).toBe("The e-mail or password is wrong");
    await expectApiError(restore({ email: `nobody_${randomUUID().slice(0, 8)}@example.com`, password: user.password }), 401, "unauthorized");
    const notDeleted = await expectApiError(restore(live), 409, "conflict");
    expect(notDeleted.error.message).toContain("POST /v1/auth/login");
    for (const body of [{ email: user.email }, { password: user.password }, { email: "not-an-email", password: user.password }, { email: user.email, password: "" }, { email: user.email, password: 12345678 }, { email: [user.email], password: user.password }]) {
      await expectError(await sendRaw(service, "POST", "/v1/auth/me/restore", { body }), 400, "invalid_request");
    }
    expect(await isDeleted(user)).toBe(true);
    expect(await knex()("sessions").where({ user_id: user.id }).whereNull("revoked_at")).toEqual([]);
  });

  it("is refused once the grace period has ended, before the purge has run; the login says so", async () => {
    const user = await registerUser(service);
    const deleted = await expectOk(as(user.auth).DELETE("/v1/auth/me"));
    clock = new Date(Date.parse(deleted.grace_period_ends) + 1000);

    const late = await expectApiError(login(user), 403, "account_pending_deletion");
    expect(late.error.details).toMatchObject({ restorable: false, grace_period_ends: deleted.grace_period_ends });
    expect(late.error.details).not.toHaveProperty("restore");
    expect(late.error.message).toContain("can no longer be restored");
    const refused = await expectApiError(restore(user), 409, "conflict");
    expect(refused.error.message).toContain("grace period");
    expect(await isDeleted(user)).toBe(true);
  });

  it("restores once when two restores race", async () => {
    const user = await registerUser(service);
    await apiKeyFor(service, user);
    await expectOk(as(user.auth).DELETE("/v1/auth/me"));
    const answers = await Promise.all([restore(user), restore(user)]);
    expect(answers.map((answer) => answer.response.status).sort()).toEqual([200, 409]);
    expect(answers.find((answer) => answer.data)?.data?.restored).toEqual({ api_keys: 1 });
    expect(await knex()("api_keys").where({ user_id: user.id }).whereNull("revoked_at")).toHaveLength(1);
  });
});

describe("after the purge", () => {
  it("frees the e-mail address and the username for a new account", async () => {
    const start = new Date();
    clock = start;
    const user = await registerUser(service);
    await expectOk(as(user.auth).DELETE("/v1/auth/me"));

    // Until the purge, the address and the name still belong to the deleted account.
    const taken = { email: user.email, username: user.username, password: "Another-pass-7" };
    await expectApiError(service.api.POST("/v1/auth/register", { body: taken }), 409, "conflict");
    await expectApiError(service.api.POST("/v1/auth/register", { body: { ...taken, email: `x_${user.email}` } }), 409, "conflict");

    clock = new Date(start.getTime() + 31 * DAY);
    await purgeDeletedAccounts(service.services);
    expect(await knex()("users").where({ id: user.id }).first()).toBeUndefined();
    // The deleted account cannot be restored any more: it is gone, and the answer is a login's.
    await expectApiError(restore(user), 401, "unauthorized");
    await expectApiError(login(user), 401, "unauthorized");

    const again = await expectOk(service.api.POST("/v1/auth/register", { body: { email: user.email.toUpperCase(), username: user.username, password: "Another-pass-7" } }), 201);
    expect(again.user.id).not.toBe(user.id);
    expect(again.user).toMatchObject({ username: user.username, email_verified: false });
    expect(await expectOk(login({ email: user.email, password: "Another-pass-7" }))).toMatchObject({ user: { id: again.user.id } });
    await expectApiError(login(user), 401, "unauthorized");
  });
});

describe("attempt limits on the password checks of deletion and restore", () => {
  const PER_ACCOUNT = 3;
  let limited: TestService;

  beforeAll(async () => {
    limited = await startTestService({ env: { AUTH_ATTEMPTS_PER_EMAIL: String(PER_ACCOUNT), AUTH_ATTEMPTS_PER_IP: "100000" } });
  });

  afterAll(async () => {
    await limited?.close();
  });

  it("counts a restore as a login of its e-mail address", async () => {
    const user = await registerUser(limited);
    await expectOk(limited.clientFor(user).DELETE("/v1/auth/me"));
    const attempt = (password: string) => limited.api.POST("/v1/auth/me/restore", { body: { email: user.email, password } });
    for (let i = 0; i < PER_ACCOUNT; i++) await expectApiError(attempt("Not-the-password-1"), 401, "unauthorized");
    await expectApiError(attempt(user.password), 429, "rate_limited");
    await expectApiError(limited.api.POST("/v1/auth/login", { body: { email: user.email, password: user.password } }), 429, "rate_limited");
    expect((await limited.services.db.knex("users").where({ id: user.id }).first("deleted_at")).deleted_at).not.toBeNull();
  });

  it("counts a deletion's password per account, so a stolen token cannot guess it; a deletion without one is not counted", async () => {
    const user = await registerUser(limited);
    const other = await registerUser(limited);
    const key = await apiKeyFor(limited, user);
    const attempt = (password: string) => limited.clientFor({ auth: { "x-api-key": key } }).DELETE("/v1/auth/me", { body: { password } });
    // Refusals that check no password count nothing.
    for (let i = 0; i <= PER_ACCOUNT; i++) await expectApiError(limited.clientFor({ auth: { "x-api-key": key } }).DELETE("/v1/auth/me"), 400, "invalid_request");
    for (let i = 0; i < PER_ACCOUNT; i++) await expectApiError(attempt("Not-the-password-1"), 403, "forbidden");
    await expectApiError(attempt(user.password), 429, "rate_limited");
    expect((await limited.services.db.knex("users").where({ id: user.id }).first("deleted_at")).deleted_at).toBeNull();
    // Another account's count is its own.
    await expectOk(limited.clientFor(other).DELETE("/v1/auth/me", { body: { password: other.password } }));
  });
});
