import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jsonHeaders, startTestService, type TestService } from "../support/service.ts";
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
const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  service.fetch(path, { method: "POST", headers: { ...jsonHeaders, ...headers }, body: JSON.stringify(body) });
const me = (token: string) => service.fetch("/v1/auth/me", { headers: { authorization: `Bearer ${token}` } });
const putMe = (user: TestUser, body: unknown) =>
  service.fetch("/v1/auth/me", { method: "PUT", headers: { ...jsonHeaders, ...user.auth }, body: JSON.stringify(body) });
const userRows = (email: string) => service.services.db.knex("users").whereRaw("lower(email) = lower(?)", [email]);


async function expectInvalid(response: Response, ...paths: string[]) {
  const body = await expectError(response, 400, "invalid_request");
  const named = body.error.details.errors.map((error: { path: string }) => error.path);
  for (const path of paths) expect(named).toContain(path);
}

function newInput(overrides: Record<string, unknown> = {}) {
  const suffix = unique();
  return { email: `u_${suffix}@example.com`, username: `u_${suffix}`, password: "Passw0rdOK", ...overrides };
}

describe("POST /v1/auth/register", () => {
  it("creates the account and signs it in", async () => {
    const input = newInput();
    const response = await post("/v1/auth/register", input);
    const body = await response.json();
    expect(response.status, JSON.stringify(body)).toBe(201);
    expect(body.user).toMatchObject({
      email: input.email,
      username: input.username,
      display_name: null,
      avatar_url: null,
      bio: null,
      email_verified: false,
      plan: "free",
    });
    expect(body.user.id).toEqual(expect.any(String));
    expect(body).toMatchObject({ token_type: "Bearer", expires_in: 3600 });
    expect(body.access_token.split(".")).toHaveLength(3);
    expect(body.refresh_token.length).toBeGreaterThanOrEqual(43);
    const profile = await me(body.access_token);
    expect(profile.status).toBe(200);
    expect((await profile.json()).id).toBe(body.user.id);
    const [row] = await userRows(input.email);
    expect(row.password_hash).toMatch(/^\$argon2id\$/);
  });

  it("treats e-mail addresses as the same whatever their letter case (409, no second row)", async () => {
    const suffix = unique();
    await registerUser(service, { email: `Alice_${suffix}@x.com` });
    const response = await post("/v1/auth/register", newInput({ email: `alice_${suffix}@X.COM` }));
    await expectError(response, 409, "conflict");
    expect(await userRows(`alice_${suffix}@x.com`)).toHaveLength(1);
  });

  it("treats usernames as the same whatever their letter case (409, no second row)", async () => {
    const suffix = unique();
    await registerUser(service, { username: `Bob_${suffix}` });
    const input = newInput({ username: `bOB_${suffix}` });
    await expectError(await post("/v1/auth/register", input), 409, "conflict");
    expect(await userRows(input.email)).toHaveLength(0);
  });

  it.each([
    ["shorter than 8", "Abcdef1"],
    ["without a digit", "Abcdefgh"],
    ["without an uppercase letter", "abcdefg1"],
    ["longer than 128", `A1${"x".repeat(127)}`],
  ])("rejects a password %s with 400 naming /body/password", async (_label, password) => {
    const input = newInput({ password });
    await expectInvalid(await post("/v1/auth/register", input), "/body/password");
    expect(await userRows(input.email)).toHaveLength(0);
  });

  it("accepts a password of exactly 8 characters with a digit and an uppercase letter", async () => {
    expect((await post("/v1/auth/register", newInput({ password: "Abcdefg1" }))).status).toBe(201);
  });

  it.each([
    ["2 characters", "ab"],
    ["33 characters", "a".repeat(33)],
    ["a hyphen", "ab-cd"],
    ["a space", "ab cd"],
    ["a non-ASCII letter", "abcdé"],
  ])("rejects a username of %s with 400 naming /body/username", async (_label, username) => {
    const input = newInput({ username });
    await expectInvalid(await post("/v1/auth/register", input), "/body/username");
    expect(await userRows(input.email)).toHaveLength(0);
  });

  it("accepts usernames of 3 and of 32 letters, digits and underscores", async () => {
    const three = unique().slice(0, 3);
    expect((await post("/v1/auth/register", newInput({ username: `Z${three.slice(0, 2)}` }))).status).toBe(201);
    const long = `A_9${unique()}${"x".repeat(32)}`.slice(0, 32);
    expect(long).toHaveLength(32);
    expect((await post("/v1/auth/register", newInput({ username: long }))).status).toBe(201);
  });

  it("names every missing field", async () => {
    await expectInvalid(await post("/v1/auth/register", {}), "/body/email", "/body/password", "/body/username");
  });

  it("rejects fields of the wrong type", async () => {
    const input = newInput();
    await expectInvalid(
      await post("/v1/auth/register", { email: 42, password: ["Passw0rdOK"], username: { name: "x" } }),
      "/body/email",
      "/body/password",
      "/body/username",
    );
    expect(await userRows(input.email)).toHaveLength(0);
  });

  it("rejects an invalid or over-long e-mail address", async () => {
    await expectInvalid(await post("/v1/auth/register", newInput({ email: "not-an-address" })), "/body/email");
    const long = `${"a".repeat(64)}@${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(63)}.com`;
    expect(long.length).toBeGreaterThan(254);
    await expectInvalid(await post("/v1/auth/register", newInput({ email: long })), "/body/email");
    expect(await userRows(long)).toHaveLength(0);
  });

  it("rejects a body that is not an object", async () => {
    await expectError(await post("/v1/auth/register", ["a"]), 400, "invalid_request");
    await expectError(await post("/v1/auth/register", null), 400, "invalid_request");
  });

  it("lets exactly one of two concurrent registrations of one address succeed", async () => {
    const suffix = unique();
    const responses = await Promise.all([
      post("/v1/auth/register", newInput({ email: `race_${suffix}@example.com` })),
      post("/v1/auth/register", newInput({ email: `RACE_${suffix}@example.com` })),
    ]);
    expect(responses.map((response) => response.status).sort()).toEqual([201, 409]);
    await Promise.all(responses.map((response) => response.json()));
    expect(await userRows(`race_${suffix}@example.com`)).toHaveLength(1);
  });

  it("leaves no session behind a refused registration", async () => {
    const before = await service.services.db.knex("sessions").count<{ count: string }[]>("* as count");
    const suffix = unique();
    await registerUser(service, { email: `dup_${suffix}@example.com` });
    await expectError(await post("/v1/auth/register", newInput({ email: `DUP_${suffix}@example.com` })), 409, "conflict");
    const after = await service.services.db.knex("sessions").count<{ count: string }[]>("* as count");
    expect(Number(after[0]!.count)).toBe(Number(before[0]!.count) + 1);
  });
});

describe("POST /v1/auth/login", () => {
  it("answers 200 with a token pair and the short user record", async () => {
    const user = await registerUser(service);
    const response = await post("/v1/auth/login", { email: user.email, password: user.password });
    const body = await response.json();
    expect(response.status, JSON.stringify(body)).toBe(200);
    expect(body).toMatchObject({ token_type: "Bearer", expires_in: 3600 });
    expect(body.user).toEqual({
      id: user.id,
      email: user.email,
      username: user.username,
      display_name: null,
      avatar_url: null,
      email_verified: false,
    });
    expect(body.access_token).not.toBe(user.accessToken);
    expect((await me(body.access_token)).status).toBe(200);
  });

  it("is case-insensitive on the e-mail address", async () => {
    const user = await registerUser(service);
    const response = await post("/v1/auth/login", { email: user.email.toUpperCase(), password: user.password });
    expect(response.status).toBe(200);
    expect((await response.json()).user.id).toBe(user.id);
  });

  it("answers a wrong password and an unknown e-mail alike: 401 with the same body", async () => {
    const user = await registerUser(service);
    const wrong = await post("/v1/auth/login", { email: user.email, password: "Wrong-passw0rd" });
    const unknown = await post("/v1/auth/login", { email: `nobody_${unique()}@example.com`, password: user.password });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    const [a, b] = [await wrong.json(), await unknown.json()];
    expect(a).toEqual(b);
    expect(a.error.code).toBe("unauthorized");
  });

  it("rejects missing and over-long fields with 400", async () => {
    await expectInvalid(await post("/v1/auth/login", {}), "/body/email", "/body/password");
    await expectInvalid(await post("/v1/auth/login", { email: "a@example.com", password: "" }), "/body/password");
    await expectInvalid(await post("/v1/auth/login", { email: "a@example.com", password: "A1".repeat(65) }), "/body/password");
  });

  it("refuses a deleted account", async () => {
    const user = await registerUser(service);
    await service.services.db.knex("users").where({ id: user.id }).update({ deleted_at: new Date() });
    await expectError(await post("/v1/auth/login", { email: user.email, password: user.password }), 401, "unauthorized");
  });
});

describe("POST /v1/auth/refresh", () => {
  const refresh = (token: string) => post("/v1/auth/refresh", { refresh_token: token });

  it("issues a new pair and consumes the old refresh token", async () => {
    const user = await registerUser(service);
    const response = await refresh(user.refreshToken);
    const pair = await response.json();
    expect(response.status, JSON.stringify(pair)).toBe(200);
    expect(pair).toMatchObject({ token_type: "Bearer", expires_in: 3600 });
    expect(pair.refresh_token).not.toBe(user.refreshToken);
    expect(pair.access_token).not.toBe(user.accessToken);
    expect((await me(pair.access_token)).status).toBe(200);
    // The new refresh token is good once more.
    expect((await refresh(pair.refresh_token)).status).toBe(200);
  });

  it("revokes the whole login when a consumed refresh token comes back, and only that login", async () => {
    const user = await registerUser(service);
    const other = await (await post("/v1/auth/login", { email: user.email, password: user.password })).json();
    const first = await (await refresh(user.refreshToken)).json();
    const second = await (await refresh(first.refresh_token)).json();
    expect((await me(second.access_token)).status).toBe(200);

    await expectError(await refresh(user.refreshToken), 401, "unauthorized");

    expect((await me(second.access_token)).status).toBe(401);
    expect((await me(first.access_token)).status).toBe(401);
    expect((await me(user.accessToken)).status).toBe(401);
    await expectError(await refresh(second.refresh_token), 401, "unauthorized");
    // Another login of the same user is a different family.
    expect((await me(other.access_token)).status).toBe(200);
    expect((await refresh(other.refresh_token)).status).toBe(200);
  });

  it("lets exactly one of two concurrent refreshes with one token succeed", async () => {
    const user = await registerUser(service);
    const responses = await Promise.all([refresh(user.refreshToken), refresh(user.refreshToken)]);
    const statuses = responses.map((response) => response.status).sort();
    expect(statuses).toEqual([200, 401]);
    const bodies = await Promise.all(responses.map((response) => response.json()));
    // The loser presented a token already used: that is a reuse, so the whole login is revoked,
    // the winner's new pair included (one client never needs two refreshes of one token).
    const winner = bodies.find((body) => body.access_token)!;
    expect((await me(winner.access_token)).status).toBe(401);
    await expectError(await refresh(winner.refresh_token), 401, "unauthorized");
  });

  it("refuses an unknown, empty or over-long refresh token", async () => {
    await expectError(await refresh(randomBytes(32).toString("base64url")), 401, "unauthorized");
    await expectInvalid(await refresh(""), "/body/refresh_token");
    await expectInvalid(await refresh("x".repeat(513)), "/body/refresh_token");
    await expectInvalid(await post("/v1/auth/refresh", {}), "/body/refresh_token");
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
    await expectError(await service.fetch("/v1/auth/me", { method: "PUT", headers: jsonHeaders, body: "{}" }), 401, "unauthorized");
  });

  it("changes only the supplied fields, and null clears", async () => {
    const user = await registerUser(service);
    const set = await putMe(user, { display_name: "Mara L", bio: "Hello", avatar_url: "https://cdn.example.com/a.png" });
    const body = await set.json();
    expect(set.status, JSON.stringify(body)).toBe(200);
    expect(body).toMatchObject({ display_name: "Mara L", bio: "Hello", avatar_url: "https://cdn.example.com/a.png", username: user.username });

    const partial = await (await putMe(user, { bio: "Changed" })).json();
    expect(partial).toMatchObject({ display_name: "Mara L", bio: "Changed", avatar_url: "https://cdn.example.com/a.png" });

    const renamed = `r_${unique()}`;
    const cleared = await (await putMe(user, { display_name: null, bio: null, avatar_url: null, username: renamed })).json();
    expect(cleared).toMatchObject({ display_name: null, bio: null, avatar_url: null, username: renamed, email: user.email });
    expect(await (await me(user.accessToken)).json()).toMatchObject({ display_name: null, bio: null, avatar_url: null, username: renamed });

    const untouched = await putMe(user, {});
    expect(untouched.status).toBe(200);
    expect(await untouched.json()).toMatchObject({ username: renamed, display_name: null });
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
    await expectInvalid(await putMe(user, { username: null }), "/body/username");
    // Scalars are coerced by the validator (coerceTypes), so the wrong type here is an array.
    await expectInvalid(await putMe(user, { display_name: ["x"] }), "/body/display_name");
    expect(await (await me(user.accessToken)).json()).toMatchObject({ display_name: "Before", bio: "Before", username: user.username });

    const atLimits = await putMe(user, { bio: "b".repeat(280), display_name: "d".repeat(64) });
    expect(atLimits.status).toBe(200);
    expect(await atLimits.json()).toMatchObject({ bio: "b".repeat(280), display_name: "d".repeat(64) });
  });

  it("never changes the e-mail, plan or verification through PUT", async () => {
    const user = await registerUser(service);
    const response = await putMe(user, { email: "other@example.com", plan: "pro", email_verified: true, id: "x", display_name: "Ok" });
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
    expect(own.status).toBe(200);
    expect((await own.json()).username).toBe(user.username.toUpperCase());
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
