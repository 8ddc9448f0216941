import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Schemas } from "../../sdk/src/types.ts";
import type { ApiAnswer } from "../support/api.ts";
import { sendRaw } from "../support/raw.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { expectError } from "../support/assertions.ts";

// Registration, login, refresh and the caller's own profile, end to end over HTTP.
let service: TestService;

beforeAll(async () => {
  service = await startTestService();
});

afterAll(async () => {
  await service?.close();
});

const unique = () => randomBytes(4).toString("hex");
const register = (body: Schemas["RegisterRequest"]) => service.api.POST("/v1/auth/register", { body });
const login = (body: Schemas["LoginRequest"]) => service.api.POST("/v1/auth/login", { body });
const me = (token: string) => service.fetch("/v1/auth/me", { headers: { authorization: `Bearer ${token}` } });
const putMe = (user: TestUser, body: Schemas["UserUpdate"]) => service.clientFor(user).PUT("/v1/auth/me", { body });
// A body the contract's types refuse (a missing field, a wrong type, an unknown field), sent as is.
const postRaw = (path: string, body: unknown) => sendRaw(service, "POST", path, { body });
const userRows = (email: string) => service.services.db.knex("users").whereRaw("lower(email) = lower(?)", [email]);


async function expectInvalid(answer: Response | ApiAnswer, ...paths: string[]) {
  const body = await expectError(answer, 400, "invalid_request");
  const named = body.error.details.errors.map((error: { path: string }) => error.path);
  for (const path of paths) expect(named).toContain(path);
}

function newInput(overrides: Partial<Schemas["RegisterRequest"]> = {}) {
  const suffix = unique();
  return { email: `u_${suffix}@example.com`, username: `u_${suffix}`, password: "Passw0rdOK", ...overrides };
}

describe("POST /v1/auth/register", () => {
  it("creates the account and signs it in", async () => {
    const input = newInput();
    const { data: body, error, response } = await register(input);
    expect(response.status, JSON.stringify(error ?? body)).toBe(201);
    expect(body!.user).toMatchObject({
      email: input.email,
      username: input.username,
      display_name: null,
      avatar_url: null,
      bio: null,
      email_verified: false,
      plan: "free",
    });
    expect(body!.user.id).toEqual(expect.any(String));
    expect(body).toMatchObject({ token_type: "Bearer", expires_in: 3600 });
    expect(body!.access_token.split(".")).toHaveLength(3);
    expect(body!.refresh_token.length).toBeGreaterThanOrEqual(43);
    const profile = await me(body!.access_token);
    expect(profile.status).toBe(200);
    expect((await profile.json()).id).toBe(body!.user.id);
    const [row] = await userRows(input.email);
    expect(row.password_hash).toMatch(/^\$argon2id\$/);
  });

  it("treats e-mail addresses as the same whatever their letter case (409, no second row)", async () => {
    const suffix = unique();
    await registerUser(service, { email: `Alice_${suffix}@x.com` });
    const response = await register(newInput({ email: `alice_${suffix}@X.COM` }));
    await expectError(response, 409, "conflict");
    expect(await userRows(`alice_${suffix}@x.com`)).toHaveLength(1);
  });

  it("treats usernames as the same whatever their letter case (409, no second row)", async () => {
    const suffix = unique();
    await registerUser(service, { username: `Bob_${suffix}` });
    const input = newInput({ username: `bOB_${suffix}` });
    await expectError(await register(input), 409, "conflict");
    expect(await userRows(input.email)).toHaveLength(0);
  });

  it.each([
    ["shorter than 8", "Abcdef1"],
    ["without a digit", "Abcdefgh"],
    ["without an uppercase letter", "abcdefg1"],
    ["longer than 128", `A1${"x".repeat(127)}`],
  ])("rejects a password %s with 400 naming /body/password", async (_label, password) => {
    const input = newInput({ password });
    await expectInvalid(await register(input), "/body/password");
    expect(await userRows(input.email)).toHaveLength(0);
  });

  it("accepts a password of exactly 8 characters with a digit and an uppercase letter", async () => {
    expect((await register(newInput({ password: "Abcdefg1" }))).response.status).toBe(201);
  });

  it.each([
    ["2 characters", "ab"],
    ["33 characters", "a".repeat(33)],
    ["a hyphen", "ab-cd"],
    ["a space", "ab cd"],
    ["a non-ASCII letter", "abcdé"],
  ])("rejects a username of %s with 400 naming /body/username", async (_label, username) => {
    const input = newInput({ username });
    await expectInvalid(await register(input), "/body/username");
    expect(await userRows(input.email)).toHaveLength(0);
  });

  it("accepts usernames of 3 and of 32 letters, digits and underscores", async () => {
    const three = unique().slice(0, 3);
    expect((await register(newInput({ username: `Z${three.slice(0, 2)}` }))).response.status).toBe(201);
    const long = `A_9${unique()}${"x".repeat(32)}`.slice(0, 32);
    expect(long).toHaveLength(32);
    expect((await register(newInput({ username: long }))).response.status).toBe(201);
  });

  it("names every missing field", async () => {
    await expectInvalid(await postRaw("/v1/auth/register", {}), "/body/email", "/body/password", "/body/username");
  });

  it("rejects fields of the wrong type", async () => {
    const input = newInput();
    await expectInvalid(
      await postRaw("/v1/auth/register", { email: 42, password: ["Passw0rdOK"], username: { name: "x" } }),
      "/body/email",
      "/body/password",
      "/body/username",
    );
    expect(await userRows(input.email)).toHaveLength(0);
  });

  it("rejects an invalid or over-long e-mail address", async () => {
    await expectInvalid(await register(newInput({ email: "not-an-address" })), "/body/email");
    const long = `${"a".repeat(64)}@${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(63)}.com`;
    expect(long.length).toBeGreaterThan(254);
    await expectInvalid(await register(newInput({ email: long })), "/body/email");
    expect(await userRows(long)).toHaveLength(0);
  });

  it("rejects a body that is not an object", async () => {
    await expectError(await postRaw("/v1/auth/register", ["a"]), 400, "invalid_request");
    await expectError(await postRaw("/v1/auth/register", null), 400, "invalid_request");
  });

  it("lets exactly one of two concurrent registrations of one address succeed", async () => {
    const suffix = unique();
    const answers = await Promise.all([
      register(newInput({ email: `race_${suffix}@example.com` })),
      register(newInput({ email: `RACE_${suffix}@example.com` })),
    ]);
    expect(answers.map(({ response }) => response.status).sort()).toEqual([201, 409]);
    expect(await userRows(`race_${suffix}@example.com`)).toHaveLength(1);
  });

  it("leaves no session behind a refused registration", async () => {
    const suffix = unique();
    // The sessions of any account of this address, in either case: the registration's one only.
    const { knex } = service.services.db;
    const sessions = () => knex("sessions").whereIn("user_id", knex("users").select("id").whereRaw("lower(email) = lower(?)", [`dup_${suffix}@example.com`]));
    await registerUser(service, { email: `dup_${suffix}@example.com` });
    await expectError(await register(newInput({ email: `DUP_${suffix}@example.com` })), 409, "conflict");
    expect(await sessions()).toHaveLength(1);
  });
});

describe("POST /v1/auth/login", () => {
  it("answers 200 with a token pair and the short user record", async () => {
    const user = await registerUser(service);
    const { data: body, error, response } = await login({ email: user.email, password: user.password });
    expect(response.status, JSON.stringify(error ?? body)).toBe(200);
    expect(body).toMatchObject({ token_type: "Bearer", expires_in: 3600 });
    expect(body!.user).toEqual({
      id: user.id,
      email: user.email,
      username: user.username,
      display_name: null,
      avatar_url: null,
      email_verified: false,
    });
    expect(body!.access_token).not.toBe(user.accessToken);
    expect((await me(body!.access_token)).status).toBe(200);
  });

  it("is case-insensitive on the e-mail address", async () => {
    const user = await registerUser(service);
    const { data, response } = await login({ email: user.email.toUpperCase(), password: user.password });
    expect(response.status).toBe(200);
    expect(data!.user.id).toBe(user.id);
  });

  it("answers a wrong password and an unknown e-mail alike: 401 with the same body", async () => {
    const user = await registerUser(service);
    const wrong = await login({ email: user.email, password: "Wrong-passw0rd" });
    const unknown = await login({ email: `nobody_${unique()}@example.com`, password: user.password });
    expect(wrong.response.status).toBe(401);
    expect(unknown.response.status).toBe(401);
    const [a, b] = [wrong.error!, unknown.error!];
    expect(a).toEqual(b);
    expect(a.error.code).toBe("unauthorized");
  });

  it("rejects missing and over-long fields with 400", async () => {
    await expectInvalid(await postRaw("/v1/auth/login", {}), "/body/email", "/body/password");
    await expectInvalid(await login({ email: "a@example.com", password: "" }), "/body/password");
    await expectInvalid(await login({ email: "a@example.com", password: "A1".repeat(65) }), "/body/password");
  });

  it("refuses a deleted account: 401 for a wrong password, 403 account_pending_deletion for the right one", async () => {
    const user = await registerUser(service);
    await service.services.db.knex("users").where({ id: user.id }).update({ deleted_at: new Date() });
    await expectError(await login({ email: user.email, password: "Wrong-password-1" }), 401, "unauthorized");
    // Issue 34: the owner learns that the account can be restored (test/auth/account-restore.test.ts).
    await expectError(await login({ email: user.email, password: user.password }), 403, "account_pending_deletion");
  });
});

describe("POST /v1/auth/refresh", () => {
  const refresh = (token: string) => service.api.POST("/v1/auth/refresh", { body: { refresh_token: token } });

  it("issues a new pair and consumes the old refresh token", async () => {
    const user = await registerUser(service);
    const { data: pair, error, response } = await refresh(user.refreshToken);
    expect(response.status, JSON.stringify(error ?? pair)).toBe(200);
    expect(pair).toMatchObject({ token_type: "Bearer", expires_in: 3600 });
    expect(pair!.refresh_token).not.toBe(user.refreshToken);
    expect(pair!.access_token).not.toBe(user.accessToken);
    expect((await me(pair!.access_token)).status).toBe(200);
    // The new refresh token is good once more.
    expect((await refresh(pair!.refresh_token)).response.status).toBe(200);
  });

  it("revokes the whole login when a consumed refresh token comes back, and only that login", async () => {
    const user = await registerUser(service);
    const other = (await login({ email: user.email, password: user.password })).data!;
    const first = (await refresh(user.refreshToken)).data!;
    const second = (await refresh(first.refresh_token)).data!;
    expect((await me(second.access_token)).status).toBe(200);

    await expectError(await refresh(user.refreshToken), 401, "unauthorized");

    expect((await me(second.access_token)).status).toBe(401);
    expect((await me(first.access_token)).status).toBe(401);
    expect((await me(user.accessToken)).status).toBe(401);
    await expectError(await refresh(second.refresh_token), 401, "unauthorized");
    // Another login of the same user is a different family.
    expect((await me(other.access_token)).status).toBe(200);
    expect((await refresh(other.refresh_token)).response.status).toBe(200);
  });

  it("lets exactly one of two concurrent refreshes with one token succeed", async () => {
    const user = await registerUser(service);
    const answers = await Promise.all([refresh(user.refreshToken), refresh(user.refreshToken)]);
    const statuses = answers.map(({ response }) => response.status).sort();
    expect(statuses).toEqual([200, 401]);
    // The loser presented a token already used: that is a reuse, so the whole login is revoked,
    // the winner's new pair included (one client never needs two refreshes of one token).
    const winner = answers.find(({ data }) => data?.access_token)!.data!;
    expect((await me(winner.access_token)).status).toBe(401);
    await expectError(await refresh(winner.refresh_token), 401, "unauthorized");
  });

  it("refuses an unknown, empty or over-long refresh token", async () => {
    await expectError(await refresh(randomBytes(32).toString("base64url")), 401, "unauthorized");
    await expectInvalid(await refresh(""), "/body/refresh_token");
    await expectInvalid(await refresh("x".repeat(513)), "/body/refresh_token");
    await expectInvalid(await postRaw("/v1/auth/refresh", {}), "/body/refresh_token");
  });

  it("refuses the refresh token of a deleted account", async () => {
    const user = await registerUser(service);
    await service.services.db.knex("users").where({ id: user.id }).update({ deleted_at: new Date() });
    await expectError(await refresh(user.refreshToken), 401, "unauthorized");
  });
});

describe("GET and PUT /v1/auth/me", () => {
  it("reads the caller's own profile", async () => {
    const user = await registerUser(service);
    const response = await me(user.accessToken);
    const body = await response.json();
    expect(response.status).toBe(200);
    expect(body).toMatchObject({ id: user.id, email: user.email, username: user.username, plan: "free", email_verified: false });
  });

  it("answers 401 without a credential", async () => {
    await expectError(await service.fetch("/v1/auth/me"), 401, "unauthorized");
    await expectError(await service.api.PUT("/v1/auth/me", { body: {} }), 401, "unauthorized");
  });

  it("changes only the supplied fields, and null clears", async () => {
    const user = await registerUser(service);
    const set = await putMe(user, { display_name: "Mara L", bio: "Hello", avatar_url: "https://cdn.example.com/a.png" });
    const body = set.data;
    expect(set.response.status, JSON.stringify(set.error ?? body)).toBe(200);
    expect(body).toMatchObject({ display_name: "Mara L", bio: "Hello", avatar_url: "https://cdn.example.com/a.png", username: user.username });

    const partial = (await putMe(user, { bio: "Changed" })).data;
    expect(partial).toMatchObject({ display_name: "Mara L", bio: "Changed", avatar_url: "https://cdn.example.com/a.png" });

    const renamed = `r_${unique()}`;
    const cleared = (await putMe(user, { display_name: null, bio: null, avatar_url: null, username: renamed })).data;
    expect(cleared).toMatchObject({ display_name: null, bio: null, avatar_url: null, username: renamed, email: user.email });
    expect(await (await me(user.accessToken)).json()).toMatchObject({ display_name: null, bio: null, avatar_url: null, username: renamed });

    const untouched = await putMe(user, {});
    expect(untouched.response.status).toBe(200);
    expect(untouched.data).toMatchObject({ username: renamed, display_name: null });
  });

  it("enforces the limits of each field and writes nothing on a refusal", async () => {
    const user = await registerUser(service);
    await putMe(user, { display_name: "Before", bio: "Before" });
    await expectInvalid(await putMe(user, { avatar_url: "http://cdn.example.com/a.png" }), "/body/avatar_url");
    await expectInvalid(await putMe(user, { avatar_url: "not a url" }), "/body/avatar_url");
    await expectInvalid(await putMe(user, { bio: "b".repeat(281), display_name: "After" }), "/body/bio");
    await expectInvalid(await putMe(user, { display_name: "d".repeat(65) }), "/body/display_name");
    await expectInvalid(await putMe(user, { username: "ab" }), "/body/username");
    await expectInvalid(await putMe(user, { username: "a".repeat(33) }), "/body/username");
    await expectInvalid(await sendRaw(service, "PUT", "/v1/auth/me", { body: { username: null }, headers: user.auth }), "/body/username");
    // Scalars are coerced by the validator (coerceTypes), so the wrong type here is an array.
    await expectInvalid(await sendRaw(service, "PUT", "/v1/auth/me", { body: { display_name: ["x"] }, headers: user.auth }), "/body/display_name");
    expect(await (await me(user.accessToken)).json()).toMatchObject({ display_name: "Before", bio: "Before", username: user.username });

    const atLimits = await putMe(user, { bio: "b".repeat(280), display_name: "d".repeat(64) });
    expect(atLimits.response.status).toBe(200);
    expect(atLimits.data).toMatchObject({ bio: "b".repeat(280), display_name: "d".repeat(64) });
  });

  it("never changes the e-mail, plan or verification through PUT", async () => {
    const user = await registerUser(service);
    // Fields the contract does not have: sent raw.
    const response = await sendRaw(service, "PUT", "/v1/auth/me", {
      body: { email: "other@example.com", plan: "pro", email_verified: true, id: "x", display_name: "Ok" },
      headers: user.auth,
    });
    if (response.status === 200) {
      expect(await response.json()).toMatchObject({ id: user.id, email: user.email, plan: "free", email_verified: false, display_name: "Ok" });
    } else {
      await expectError(response, 400, "invalid_request");
    }
    expect(await (await me(user.accessToken)).json()).toMatchObject({ id: user.id, email: user.email, plan: "free", email_verified: false });
  });

  it("answers 409 for a username another account has, whatever its case", async () => {
    const taken = await registerUser(service);
    const user = await registerUser(service);
    await expectError(await putMe(user, { username: taken.username.toUpperCase() }), 409, "conflict");
    expect((await (await me(user.accessToken)).json()).username).toBe(user.username);
    // Changing the case of one's own username is allowed.
    const own = await putMe(user, { username: user.username.toUpperCase() });
    expect(own.response.status).toBe(200);
    expect(own.data!.username).toBe(user.username.toUpperCase());
  });

  it("gives each user their own profile and lets no one change another's", async () => {
    const alice = await registerUser(service);
    const bob = await registerUser(service);
    const a = await (await me(alice.accessToken)).json();
    const b = await (await me(bob.accessToken)).json();
    expect(a.id).toBe(alice.id);
    expect(b.id).toBe(bob.id);
    expect(a.id).not.toBe(b.id);
    await putMe(bob, { display_name: "Bob" });
    expect((await (await me(alice.accessToken)).json()).display_name).toBeNull();
  });
});
