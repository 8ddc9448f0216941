import { randomUUID } from "node:crypto";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { revokedCredentials } from "../../server/areas/auth/credential-cache.ts";
import { sha256 } from "../../server/toolkit/tokens.ts";
import type { ApiAnswer } from "../support/api.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser } from "../support/users.ts";
import { expectError } from "../support/assertions.ts";

// The credential middleware: session JWTs and API keys, checked against the database on every
// request, then the operation's scope.
let service: TestService;

beforeAll(async () => {
  service = await startTestService();
});

afterAll(async () => {
  await service?.close();
});

const me = (headers: Record<string, string>) => service.fetch("/v1/auth/me", { headers });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split(".")[1]!, "base64url").toString()) as { sub: string; sid: string; iat: number; exp: number };
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");


const keyRow = (key: string) => service.services.db.knex("api_keys").where({ key_hash: sha256(key) });
// Credentials are cached per process; the service's own revocations announce themselves. A change
// made in SQL behind the service's back is announced the same way, as an operator's tool would.
const changedInSql = (userId: string) => revokedCredentials(service.services, { userId });

describe("session access tokens", () => {
  it("let the holder in", async () => {
    const user = await registerUser(service);
    const response = await me(user.auth);
    expect(response.status).toBe(200);
    expect((await response.json()).id).toBe(user.id);
  });

  it.each([
    ["garbage", "garbage"],
    ["Bearer with nothing", "Bearer"],
    ["Bearer and spaces", "Bearer    "],
    ["three dots", "Bearer ..."],
    ["three empty-ish parts", "Bearer a.b.c"],
    ["a Basic credential", "Basic dXNlcjpwYXNz"],
    ["two tokens", "Bearer a.b.c d.e.f"],
  ])("refuse a malformed Authorization header (%s) with 401", async (_label, header) => {
    await expectError(await me({ authorization: header }), 401, "unauthorized");
  });

  it("refuse a missing credential with 401", async () => {
    await expectError(await me({}), 401, "unauthorized");
  });

  it("refuse an unsigned token (alg: none) carrying real claims", async () => {
    const user = await registerUser(service);
    const claims = claimsOf(user.accessToken);
    const unsigned = `${b64({ alg: "none", typ: "JWT" })}.${b64(claims)}.`;
    await expectError(await me(bearer(unsigned)), 401, "unauthorized");
    // The same claims under the real token's header but with the signature stripped.
    const [header, payload] = user.accessToken.split(".");
    await expectError(await me(bearer(`${header}.${payload}.`)), 401, "unauthorized");
  });

  it("refuse a token signed with another secret", async () => {
    const user = await registerUser(service);
    const claims = claimsOf(user.accessToken);
    const forged = await new SignJWT({ sid: claims.sid })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(claims.sub)
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(new TextEncoder().encode("a-different-secret-of-enough-length-0123456789"));
    await expectError(await me(bearer(forged)), 401, "unauthorized");
  });

  it("refuse a token signed with the real secret but without an expiry or with another algorithm", async () => {
    const user = await registerUser(service);
    const { sub, sid } = claimsOf(user.accessToken);
    const row = await service.services.db.knex("instance_secrets").where({ name: "jwt" }).first<{ value: string }>();
    const secret = new TextEncoder().encode(row!.value);
    const sign = (alg: string) => new SignJWT({ sid }).setProtectedHeader({ alg, typ: "JWT" }).setSubject(sub).setIssuedAt();
    // The control: the real secret and a proper token pass.
    expect((await me(bearer(await sign("HS256").setExpirationTime("1h").sign(secret)))).status).toBe(200);
    await expectError(await me(bearer(await sign("HS256").sign(secret))), 401, "unauthorized");
    await expectError(await me(bearer(await sign("HS512").setExpirationTime("1h").sign(secret))), 401, "unauthorized");
  });

  it("refuse a validly signed token whose session belongs to another user", async () => {
    const alice = await registerUser(service);
    const bob = await registerUser(service);
    const { sid } = claimsOf(alice.accessToken);
    const crossed = await service.services.tokens.sign({ sub: bob.id, sid }, new Date());
    await expectError(await me(bearer(crossed)), 401, "unauthorized");
    const unknownSession = await service.services.tokens.sign({ sub: bob.id, sid: randomUUID() }, new Date());
    await expectError(await me(bearer(unknownSession)), 401, "unauthorized");
  });

  it("stop working on the very next request once the account is deleted", async () => {
    const user = await registerUser(service);
    const key = await apiKeyFor(service, user);
    expect((await me(user.auth)).status).toBe(200);
    expect((await me({ "x-api-key": key })).status).toBe(200);
    await service.services.db.knex("users").where({ id: user.id }).update({ deleted_at: new Date() });
    await changedInSql(user.id);
    await expectError(await me(user.auth), 401, "unauthorized");
    await expectError(await me({ "x-api-key": key }), 401, "unauthorized");
  });

  it("give each user only their own account", async () => {
    const alice = await registerUser(service);
    const bob = await registerUser(service);
    const a = await (await me(alice.auth)).json();
    const b = await (await me({ "x-api-key": await apiKeyFor(service, bob) })).json();
    expect(a.id).toBe(alice.id);
    expect(b.id).toBe(bob.id);
    expect(a.id).not.toBe(b.id);
  });
});

describe("expiry of access tokens", () => {
  let clocked: TestService;
  let now = Date.now();

  beforeAll(async () => {
    clocked = await startTestService({ now: () => new Date(now) });
  });

  afterAll(async () => {
    await clocked?.close();
  });

  it("refuses an access token after its hour, and its refresh token still renews it", async () => {
    const user = await registerUser(clocked);
    const get = (token: string) => clocked.fetch("/v1/auth/me", { headers: bearer(token) });
    now += 3599_000;
    expect((await get(user.accessToken)).status).toBe(200);
    now += 2_000;
    await expectError(await get(user.accessToken), 401, "unauthorized");

    const renewed = await clocked.api.POST("/v1/auth/refresh", { body: { refresh_token: user.refreshToken } });
    expect(renewed.response.status).toBe(200);
    expect((await get(renewed.data!.access_token)).status).toBe(200);
  });

  it("writes an API key's last_used_at at most once a minute", async () => {
    const user = await registerUser(clocked);
    const key = await apiKeyFor(clocked, user);
    const row = () => clocked.services.db.knex("api_keys").where({ key_hash: sha256(key) }).first();
    const use = () => clocked.fetch("/v1/auth/me", { headers: { "x-api-key": key } });
    expect((await use()).status).toBe(200);
    const first = (await row()).last_used_at as Date;
    expect(first.getTime()).toBe(now);
    now += 30_000;
    expect((await use()).status).toBe(200);
    expect(((await row()).last_used_at as Date).getTime()).toBe(first.getTime());
    now += 31_000;
    expect((await use()).status).toBe(200);
    expect(((await row()).last_used_at as Date).getTime()).toBe(now);
  });

  it("refuses a refresh token after its 30 days", async () => {
    const user = await registerUser(clocked);
    now += 30 * 24 * 3600_000 + 1000;
    await expectError(await clocked.api.POST("/v1/auth/refresh", { body: { refresh_token: user.refreshToken } }), 401, "unauthorized");
  });
});

describe("API keys", () => {
  it("work in X-API-Key and as Authorization: Bearer pk_...", async () => {
    const user = await registerUser(service);
    const key = await apiKeyFor(service, user);
    expect(key).toMatch(/^pk_[0-9A-Za-z]{43}$/);
    const viaHeader = await me({ "x-api-key": key });
    expect(viaHeader.status).toBe(200);
    expect((await viaHeader.json()).id).toBe(user.id);
    const viaBearer = await me(bearer(key));
    expect(viaBearer.status).toBe(200);
    expect((await viaBearer.json()).id).toBe(user.id);
  });

  it("refuse an unknown key, in either header", async () => {
    await expectError(await me({ "x-api-key": "pk_unknown" }), 401, "unauthorized");
    await expectError(await me(bearer(`pk_${"0".repeat(43)}`)), 401, "unauthorized");
  });

  it("record last_used_at when used", async () => {
    const user = await registerUser(service);
    const key = await apiKeyFor(service, user);
    expect((await keyRow(key).first()).last_used_at).toBeNull();
    const before = Date.now();
    expect((await me({ "x-api-key": key })).status).toBe(200);
    const used = (await keyRow(key).first()).last_used_at as Date;
    expect(used).toBeInstanceOf(Date);
    expect(used.getTime()).toBeGreaterThanOrEqual(before - 1000);
  });

  it("stop working on the very next request once revoked", async () => {
    const user = await registerUser(service);
    const key = await apiKeyFor(service, user);
    expect((await me({ "x-api-key": key })).status).toBe(200);
    await keyRow(key).update({ revoked_at: new Date() });
    await changedInSql(user.id);
    await expectError(await me({ "x-api-key": key }), 401, "unauthorized");
    await expectError(await me(bearer(key)), 401, "unauthorized");
  });

  it("stop working once expired", async () => {
    const user = await registerUser(service);
    const key = await apiKeyFor(service, user);
    expect((await me({ "x-api-key": key })).status).toBe(200);
    await keyRow(key).update({ expires_at: new Date(Date.now() - 1000) });
    await changedInSql(user.id);
    await expectError(await me({ "x-api-key": key }), 401, "unauthorized");
    // A key with a future expiry works.
    await keyRow(key).update({ expires_at: new Date(Date.now() + 3600_000) });
    await changedInSql(user.id);
    expect((await me({ "x-api-key": key })).status).toBe(200);
  });

  it("take precedence over a session token in the same request", async () => {
    const user = await registerUser(service);
    const key = await apiKeyFor(service, user, ["personas:read"]);
    // The key's scope decides, not the session's.
    await expectError(await me({ ...user.auth, "x-api-key": key }), 403, "forbidden");
  });
});

describe("scopes", () => {
  const persona = { name: "Ada", instructions: "Be kind." };
  const message = { content: "Hello" };
  const withKey = (key: string) => service.clientFor({ auth: { "x-api-key": key } });
  const getMe = (key: string) => withKey(key).GET("/v1/auth/me");
  const listPersonas = (key: string) => withKey(key).GET("/v1/personas");
  const listConversations = (key: string) => withKey(key).GET("/v1/conversations");
  const createPersona = (key: string) => withKey(key).POST("/v1/personas", { body: persona });
  const sendMessage = (key: string) => withKey(key).POST("/v1/conversations/{id}/messages", { params: { path: { id: randomUUID() } }, body: message });
  // Anything but 401/403 (a 2xx, or 404 for the random conversation id) proves the request got past auth.
  const passedAuth = ({ data, error, response }: ApiAnswer) => {
    expect([200, 201, 404], JSON.stringify(error ?? data)).toContain(response.status);
  };

  it("a personas:read key reads personas but not the account", async () => {
    const key = await apiKeyFor(service, await registerUser(service), ["personas:read"]);
    const body = await expectError(await getMe(key), 403, "forbidden");
    expect(body.error.message).toMatch(/admin/);
    passedAuth(await listPersonas(key));
    await expectError(await createPersona(key), 403, "forbidden");
  });

  it("a read key may GET personas but not POST them", async () => {
    const key = await apiKeyFor(service, await registerUser(service), ["read"]);
    passedAuth(await listPersonas(key));
    passedAuth(await listConversations(key));
    await expectError(await createPersona(key), 403, "forbidden");
    await expectError(await sendMessage(key), 403, "forbidden");
    // read excludes the admin-only areas, GETs included.
    await expectError(await getMe(key), 403, "forbidden");
  });

  it("a chat key may send messages and read its own account but not create personas", async () => {
    const user = await registerUser(service);
    const key = await apiKeyFor(service, user, ["chat"]);
    passedAuth(await sendMessage(key));
    passedAuth(await listPersonas(key));
    await expectError(await createPersona(key), 403, "forbidden");
    // A chat client shows whose chat it is (docs/adr/0292-a-chat-key-runs-a-whole-chat.md).
    const { data, response } = await getMe(key);
    expect(response.status).toBe(200);
    expect(data!.id).toBe(user.id);
  });

  it("an admin key passes everything", async () => {
    const user = await registerUser(service);
    const key = await apiKeyFor(service, user, ["admin"]);
    const { data, response } = await getMe(key);
    expect(response.status).toBe(200);
    expect(data!.id).toBe(user.id);
    passedAuth(await listPersonas(key));
    passedAuth(await createPersona(key));
    passedAuth(await sendMessage(key));
  });

  it("a session token has every scope", async () => {
    const user = await registerUser(service);
    passedAuth(await service.clientFor(user).POST("/v1/personas", { body: persona }));
    expect((await me(user.auth)).status).toBe(200);
  });

  it("a refused scope is 403 only for a valid key: a revoked one is still 401", async () => {
    const user = await registerUser(service);
    const key = await apiKeyFor(service, user, ["personas:read"]);
    await keyRow(key).update({ revoked_at: new Date() });
    await changedInSql(user.id);
    await expectError(await getMe(key), 401, "unauthorized");
  });
});

describe("credential-free operations", () => {
  it("ignore a bad credential", async () => {
    const user = await registerUser(service);
    const bad = service.clientFor({ auth: { authorization: "garbage", "x-api-key": "pk_nope" } });
    const login = await bad.POST("/v1/auth/login", { body: { email: user.email, password: user.password } });
    expect(login.response.status).toBe(200);
    const refresh = await service.clientFor({ auth: { authorization: "Bearer not.a.jwt" } }).POST("/v1/auth/refresh", {
      body: { refresh_token: login.data!.refresh_token },
    });
    expect(refresh.response.status).toBe(200);
    const register = await bad.POST("/v1/auth/register", {
      body: { email: `x_${randomUUID()}@example.com`, username: `x_${randomUUID().slice(0, 8)}`, password: "Passw0rdOK" },
    });
    expect(register.response.status).toBe(201);
  });
});
