import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerOAuthClient, type RegisteredClient } from "../../server/areas/auth/oauth/clients.ts";
import { sha256 } from "../../server/toolkit/tokens.ts";
import { ApiError } from "../../server/toolkit/http/errors.ts";
import type { Schemas } from "../../sdk/src/types.ts";
import type { ApiAnswer } from "../support/api.ts";
import { sendRaw } from "../support/raw.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";

// The authorization-code flow end to end over HTTP, as a browser and a client backend would drive it.
let service: TestService;
let user: TestUser;
let client: RegisteredClient;
let other: RegisteredClient;
let offset = 0; // ms the service's clock runs ahead of the real one
const REDIRECT = "https://client.example/oauth/callback?tenant=1";
const CLIENT_NAME = `Starlog <b>"Tutor"</b> & Co`;

beforeAll(async () => {
  service = await startTestService({ now: () => new Date(Date.now() + offset) });
  user = await registerUser(service);
  client = await registerOAuthClient(service.services, { name: CLIENT_NAME, redirectUris: [REDIRECT, "http://127.0.0.1:8123/cb"] });
  other = await registerOAuthClient(service.services.db.knex, { name: "Other app", redirectUris: ["https://other.example/cb"] });
});

afterAll(async () => {
  await service?.close();
});

type Params = Record<string, string>;

function authorizeUrl(overrides: Params = {}, drop: string[] = []): string {
  const params: Params = {
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: REDIRECT,
    scope: "personas:read conversations:write",
    state: "st-" + randomBytes(6).toString("hex"),
    ...overrides,
  };
  for (const name of drop) delete params[name];
  return `/v1/oauth/authorize?${query(params)}`;
}

// Percent-encodes everything reserved, spaces as %20: the contract validator refuses a raw `+`
// (or any reserved character) in a query value.
const strict = (value: string) => encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const query = (params: Params) => Object.entries(params).map(([k, v]) => `${k}=${strict(v)}`).join("&");

const unescape = (value: string) =>
  value.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");

/** The hidden fields of a rendered consent page. */
function hiddenFields(html: string): Params {
  const fields: Params = {};
  for (const [, name, value] of html.matchAll(/<input type="hidden" name="([a-z_]+)" value="([^"]*)">/g)) fields[name!] = unescape(value!);
  return fields;
}

async function openPage(overrides: Params = {}): Promise<{ response: Response; html: string; fields: Params }> {
  const response = await service.fetch(authorizeUrl(overrides), { redirect: "manual" });
  const html = await response.text();
  expect(response.status, html).toBe(200);
  return { response, html, fields: hiddenFields(html) };
}

function postConsent(form: Params): Promise<Response> {
  return service.fetch("/v1/oauth/authorize", {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(form).toString(),
  });
}

async function approve(overrides: Params = {}, as: TestUser = user): Promise<{ code: string; state: string; location: URL }> {
  const { fields } = await openPage(overrides);
  const response = await postConsent({ ...fields, email: as.email, password: as.password, decision: "approve" });
  expect(response.status, await response.clone().text()).toBe(303);
  const location = new URL(response.headers.get("location")!);
  return { code: location.searchParams.get("code")!, state: location.searchParams.get("state")!, location };
}

type TokenRequest = Schemas["OAuthTokenRequest"];

/** The token endpoint with a JSON body. */
const token = (body: TokenRequest) => service.api.POST("/v1/oauth/token", { body });

/** The token endpoint with a form-encoded body, as many OAuth clients send it. */
function tokenForm(body: Params): Promise<Response> {
  return service.fetch("/v1/oauth/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(body).toString(),
  });
}

const exchange = (code: string, extra: Partial<TokenRequest> = {}) =>
  token({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, client_id: client.client_id, client_secret: client.client_secret, ...extra });

const bearer = (accessToken: string) => ({ authorization: `Bearer ${accessToken}` });

async function expectJsonError(answer: Response | ApiAnswer, status: number, code = "invalid_request") {
  const [response, text] = answer instanceof Response ? [answer, await answer.text()] : [answer.response, JSON.stringify(answer.error ?? answer.data)];
  expect(response.status, text).toBe(status);
  expect(response.headers.get("location")).toBeNull();
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  const body = JSON.parse(text);
  expect(body.error.code).toBe(code);
  return body;
}

const verifierPair = () => {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
};

describe("the authorization-code flow", () => {
  it("renders the consent page, redirects with a code, and exchanges it for scoped tokens", async () => {
    const state = "xyz-" + randomBytes(4).toString("hex");
    const { response, html, fields } = await openPage({ state });
    expect(response.headers.get("content-type")).toMatch(/^text\/html/);
    // form-action names the client's origin too: Chromium applies it to the 303 that follows the post.
    expect(response.headers.get("content-security-policy")).toBe(
      "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' https://client.example; frame-ancestors 'none'",
    );
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    expect(html).toContain("Starlog &lt;b&gt;&quot;Tutor&quot;&lt;/b&gt; &amp; Co");
    expect(html).not.toContain("<b>");
    expect(html).toMatch(/See your personas/);
    expect(html).toMatch(/send messages for you/);
    expect(html).toMatch(/<label for="email">/);
    expect(html).toMatch(/<label for="password">/);
    expect(fields).toMatchObject({ client_id: client.client_id, redirect_uri: REDIRECT, scope: "personas:read conversations:write", state });
    expect(fields.csrf_token).toBeTruthy();

    const consent = await postConsent({ ...fields, email: user.email, password: user.password, decision: "approve" });
    expect(consent.status).toBe(303);
    const location = new URL(consent.headers.get("location")!);
    expect(`${location.origin}${location.pathname}`).toBe("https://client.example/oauth/callback");
    expect(location.searchParams.get("tenant")).toBe("1");
    expect(location.searchParams.get("state")).toBe(state);
    const code = location.searchParams.get("code")!;
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const exchanged = await tokenForm({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, client_id: client.client_id, client_secret: client.client_secret });
    const tokens = await exchanged.json();
    expect(exchanged.status, JSON.stringify(tokens)).toBe(200);
    expect(exchanged.headers.get("cache-control")).toBe("no-store");
    expect(tokens).toMatchObject({ token_type: "Bearer", expires_in: 3600, scope: "personas:read conversations:write" });
    expect(typeof tokens.access_token).toBe("string");
    expect(typeof tokens.refresh_token).toBe("string");

    // personas:read gets past auth; admin-only does not.
    expect((await service.fetch("/v1/personas", { headers: bearer(tokens.access_token) })).status).toBe(200);
    await expectJsonError(await service.fetch("/v1/auth/me", { headers: bearer(tokens.access_token) }), 403, "forbidden");

    const refreshed = await token({
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: client.client_id,
      client_secret: client.client_secret,
    });
    const pair = refreshed.data!;
    expect(refreshed.response.status, JSON.stringify(refreshed.error ?? pair)).toBe(200);
    expect(pair).toMatchObject({ token_type: "Bearer", expires_in: 3600, scope: "personas:read conversations:write" });
    expect(pair.refresh_token).not.toBe(tokens.refresh_token);
    expect((await service.fetch("/v1/personas", { headers: bearer(pair.access_token) })).status).toBe(200);

    // The grant's refresh token needs its client's credentials.
    const wrongSecret: TokenRequest = { grant_type: "refresh_token", refresh_token: pair.refresh_token, client_id: client.client_id, client_secret: "cs_wrong" };
    await expectJsonError(await token(wrongSecret), 401, "unauthorized");
    await expectJsonError(await token({ ...wrongSecret, client_id: other.client_id, client_secret: other.client_secret }), 401, "unauthorized");
    await expectJsonError(await service.api.POST("/v1/auth/refresh", { body: { refresh_token: pair.refresh_token } }), 401, "unauthorized");
    // No client_secret at all breaks the contract: 400 before any handler runs.
    const { client_secret: _, ...noSecret } = { ...wrongSecret };
    await expectJsonError(await sendRaw(service, "POST", "/v1/oauth/token", { body: noSecret }), 400);
  });

  it("redirects a denial with error=access_denied and the state", async () => {
    const state = "deny-" + randomBytes(4).toString("hex");
    const { fields } = await openPage({ state });
    const response = await postConsent({ ...fields, email: user.email, password: "whatever-1A", decision: "deny" });
    expect(response.status).toBe(303);
    const location = new URL(response.headers.get("location")!);
    expect(location.searchParams.get("error")).toBe("access_denied");
    expect(location.searchParams.get("state")).toBe(state);
    expect(location.searchParams.has("code")).toBe(false);
  });

  it("takes a denial without credentials; an approval without them shows the page again (issue 13, item 17)", async () => {
    const state = "deny-bare-" + randomBytes(4).toString("hex");
    const { fields, html } = await openPage({ state });
    expect(html).toMatch(/value="deny" formnovalidate/);
    const denied = await postConsent({ ...fields, decision: "deny" });
    expect(denied.status).toBe(303);
    expect(new URL(denied.headers.get("location")!).searchParams.get("error")).toBe("access_denied");

    const bare = await postConsent({ ...(await openPage()).fields, decision: "approve" });
    const page = await bare.text();
    expect(bare.status).toBe(200);
    expect(page).toContain("Enter your e-mail and password to approve.");
  });

  it("echoes an unusual state exactly and escapes it in the page", async () => {
    const state = `a b&c=d/é+%20"><script>alert(1)</script>`;
    const { html, fields } = await openPage({ state });
    expect(html).not.toContain("<script>");
    expect(fields.state).toBe(state);
    const { state: echoed } = await approve({ state });
    expect(echoed).toBe(state);
  });

  it("accepts any registered redirect_uri and needs it again, unchanged, at the token endpoint", async () => {
    const { code } = await approve({ redirect_uri: "http://127.0.0.1:8123/cb" });
    await expectJsonError(await exchange(code, { redirect_uri: REDIRECT }), 400);
    const ok = await exchange(code, { redirect_uri: "http://127.0.0.1:8123/cb" });
    expect(ok.response.status, JSON.stringify(ok.error ?? ok.data)).toBe(200);
  });
});

describe("client and redirect checks never redirect", () => {
  it("answers an unknown client_id with a JSON 400", async () => {
    await expectJsonError(await service.fetch(authorizeUrl({ client_id: "oc_nope" }), { redirect: "manual" }), 400);
  });

  it("answers a redirect_uri that is not registered exactly with a JSON 400", async () => {
    for (const redirect_uri of [
      "https://evil.example/cb",
      "https://client.example/oauth/callback",
      `${REDIRECT}&x=1`,
      "https://client.example/oauth/callback/?tenant=1",
      "https://other.example/cb",
    ]) {
      await expectJsonError(await service.fetch(authorizeUrl({ redirect_uri }), { redirect: "manual" }), 400);
    }
  });

  it("answers the same on the consent post, even with a valid login", async () => {
    const { fields } = await openPage();
    const login = { email: user.email, password: user.password, decision: "approve" };
    await expectJsonError(await postConsent({ ...fields, ...login, redirect_uri: "https://evil.example/cb" }), 400);
    await expectJsonError(await postConsent({ ...fields, ...login, client_id: other.client_id }), 400);
    await expectJsonError(await postConsent({ ...fields, ...login, client_id: "oc_nope" }), 400);
  });

  it("refuses unknown scopes, a non-code response_type, and a missing state or scope", async () => {
    const body = await expectJsonError(await service.fetch(authorizeUrl({ scope: "personas:read billing:all" }), { redirect: "manual" }), 400);
    expect(body.error.message).toMatch(/billing:all/);
    await expectJsonError(await service.fetch(authorizeUrl({ scope: "read" }), { redirect: "manual" }), 400);
    await expectJsonError(await service.fetch(authorizeUrl({ scope: " " }), { redirect: "manual" }), 400);
    await expectJsonError(await service.fetch(authorizeUrl({ response_type: "token" }), { redirect: "manual" }), 400);
    await expectJsonError(await service.fetch(authorizeUrl({}, ["state"]), { redirect: "manual" }), 400);
    await expectJsonError(await service.fetch(authorizeUrl({}, ["scope"]), { redirect: "manual" }), 400);
    await expectJsonError(await service.fetch(authorizeUrl({ state: "s".repeat(501) }), { redirect: "manual" }), 400);
  });
});

describe("the consent form", () => {
  it("answers a wrong password with the page again, an error and no code", async () => {
    const before = await service.services.db.knex("oauth_codes").where({ user_id: user.id }).count<{ count: string }[]>("* as count");
    const { fields } = await openPage();
    for (const login of [
      { email: user.email, password: "Wrong-password-1" },
      { email: `nobody_${randomBytes(3).toString("hex")}@example.com`, password: user.password },
    ]) {
      const response = await postConsent({ ...fields, ...login, decision: "approve" });
      const html = await response.text();
      expect(response.status).toBe(200);
      expect(response.headers.get("location")).toBeNull();
      expect(response.headers.get("content-type")).toMatch(/^text\/html/);
      expect(response.headers.get("x-frame-options")).toBe("DENY");
      expect(response.headers.get("content-security-policy")).toMatch(/^default-src 'none'/);
      expect(html).toMatch(/role="alert"[^>]*>Wrong e-mail or password\./);
      expect(html).toContain(`value="${login.email}"`);
      expect(html).not.toContain(login.password);
      // The page again carries a fresh token that works.
      const again = hiddenFields(html);
      expect(again.csrf_token).toBeTruthy();
      const retry = await postConsent({ ...again, email: user.email, password: user.password, decision: "deny" });
      expect(retry.status).toBe(303);
    }
    const after = await service.services.db.knex("oauth_codes").where({ user_id: user.id }).count<{ count: string }[]>("* as count");
    expect(Number(after[0]!.count)).toBe(Number(before[0]!.count));
  });

  it("refuses a missing, tampered, or mismatched CSRF token", async () => {
    const { fields } = await openPage();
    const login = { email: user.email, password: user.password, decision: "approve" };
    const { csrf_token, ...noToken } = fields;
    await expectJsonError(await postConsent({ ...noToken, ...login }), 400);
    const [time, mac] = csrf_token!.split(".");
    const flipped = mac!.slice(0, -1) + (mac!.endsWith("A") ? "B" : "A");
    await expectJsonError(await postConsent({ ...fields, ...login, csrf_token: `${time}.${flipped}` }), 400);
    await expectJsonError(await postConsent({ ...fields, ...login, csrf_token: `${Number(time) + 1}.${mac}` }), 400);
    await expectJsonError(await postConsent({ ...fields, ...login, csrf_token: "garbage" }), 400);
    // The token binds every hidden field: widening the scope or swapping the state is refused.
    await expectJsonError(await postConsent({ ...fields, ...login, scope: "admin" }), 400);
    await expectJsonError(await postConsent({ ...fields, ...login, state: "other-state" }), 400);
    // A token from another authorization request does not fit this one.
    const { fields: second } = await openPage();
    await expectJsonError(await postConsent({ ...fields, ...login, csrf_token: second.csrf_token! }), 400);
    // Nothing above was written; the untouched form still works.
    expect((await postConsent({ ...fields, ...login })).status).toBe(303);
  });

  it("refuses a page left open longer than an hour", async () => {
    const { fields } = await openPage();
    offset += 61 * 60 * 1000;
    try {
      await expectJsonError(await postConsent({ ...fields, email: user.email, password: user.password, decision: "approve" }), 400);
    } finally {
      offset -= 61 * 60 * 1000;
    }
  });
});

describe("codes", () => {
  it("are single-use: a replay answers 400 and revokes the tokens of the first exchange", async () => {
    const { code } = await approve();
    const first = await exchange(code);
    const tokens = first.data!;
    expect(first.response.status, JSON.stringify(first.error ?? tokens)).toBe(200);
    expect((await service.fetch("/v1/personas", { headers: bearer(tokens.access_token) })).status).toBe(200);

    await expectJsonError(await exchange(code), 400);
    await expectJsonError(await service.fetch("/v1/personas", { headers: bearer(tokens.access_token) }), 401, "unauthorized");
    await expectJsonError(
      await token({ grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: client.client_id, client_secret: client.client_secret }),
      401,
      "unauthorized",
    );
    // The stored code is a hash, never the code itself.
    const row = await service.services.db.knex("oauth_codes").where({ code_hash: sha256(code) }).first();
    expect(row.used_at).not.toBeNull();
    expect(await service.services.db.knex("oauth_codes").where({ code_hash: code }).first()).toBeUndefined();
  });

  it("are single-use under a race too: of two concurrent exchanges none ends with working tokens", async () => {
    const { code } = await approve();
    const answers = await Promise.all([exchange(code), exchange(code)]);
    // The loser answers 400; the winner answers 200 with tokens the replay then revokes, or, when
    // the replay came first, 400 itself.
    const statuses = answers.map((r) => r.response.status).sort();
    expect([[200, 400], [400, 400]]).toContainEqual(statuses);
    const won = answers.find((r) => r.response.status === 200);
    if (won) {
      const tokens = won.data!;
      await expectJsonError(await service.fetch("/v1/personas", { headers: bearer(tokens.access_token) }), 401, "unauthorized");
    }
    const sessions = await service.services.db.knex("sessions").where({ user_id: user.id, client_id: client.client_id }).whereNull("revoked_at");
    const row = await service.services.db.knex("oauth_codes").where({ code_hash: sha256(code) }).first();
    expect(row.reused_at).not.toBeNull();
    expect(sessions.map((s: { id: string }) => s.id)).not.toContain(row.session_id);
  });

  it("expire after 10 minutes", async () => {
    const { code: late } = await approve();
    const { code: inTime } = await approve();
    offset += 10 * 60 * 1000 + 1000;
    try {
      await expectJsonError(await exchange(late), 400);
    } finally {
      offset -= 10 * 60 * 1000 + 1000;
    }
    offset += 9 * 60 * 1000;
    try {
      expect((await exchange(inTime)).response.status).toBe(200);
    } finally {
      offset -= 9 * 60 * 1000;
    }
  });

  it("belong to their client: another client, a wrong secret or an unknown code get nothing", async () => {
    const { code } = await approve();
    await expectJsonError(await exchange(code, { client_id: other.client_id, client_secret: other.client_secret }), 400);
    await expectJsonError(await exchange(code, { client_secret: other.client_secret }), 401, "unauthorized");
    await expectJsonError(await exchange(code, { client_id: "oc_unknown" }), 401, "unauthorized");
    await expectJsonError(await exchange("not-a-code"), 400);
    const noCode = await expectJsonError(await token({ grant_type: "authorization_code", redirect_uri: REDIRECT, client_id: client.client_id, client_secret: client.client_secret }), 400);
    expect(noCode.error.message).toMatch(/code is required/);
    // None of the refusals above spent the code.
    expect((await exchange(code)).response.status).toBe(200);
  });

  it("carry the user who approved: each user's tokens act for that user only", async () => {
    const second = await registerUser(service);
    const { code } = await approve({ scope: "admin" }, second);
    const tokens = (await exchange(code)).data!;
    expect(tokens.scope).toBe("admin");
    const me = await service.fetch("/v1/auth/me", { headers: bearer(tokens.access_token) });
    const body = await me.json();
    expect(me.status, JSON.stringify(body)).toBe(200);
    expect(body.id).toBe(second.id);
    expect(body.id).not.toBe(user.id);
  });
});

describe("PKCE (S256)", () => {
  it("needs the right verifier when a challenge was sent", async () => {
    const { verifier, challenge } = verifierPair();
    const { fields } = await openPage({ code_challenge: challenge, code_challenge_method: "S256" });
    expect(fields).toMatchObject({ code_challenge: challenge, code_challenge_method: "S256" });
    const response = await postConsent({ ...fields, email: user.email, password: user.password, decision: "approve" });
    const code = new URL(response.headers.get("location")!).searchParams.get("code")!;

    await expectJsonError(await exchange(code), 400);
    await expectJsonError(await exchange(code, { code_verifier: verifierPair().verifier }), 400);
    await expectJsonError(await exchange(code, { code_verifier: "short" }), 400);
    const ok = await exchange(code, { code_verifier: verifier });
    expect(ok.response.status, JSON.stringify(ok.error ?? ok.data)).toBe(200);
  });

  it("refuses plain or a half-given challenge, and a stripped challenge on the form", async () => {
    const { challenge } = verifierPair();
    await expectJsonError(await service.fetch(authorizeUrl({ code_challenge: challenge }), { redirect: "manual" }), 400);
    await expectJsonError(await service.fetch(authorizeUrl({ code_challenge_method: "S256" }), { redirect: "manual" }), 400);
    await expectJsonError(await service.fetch(authorizeUrl({ code_challenge: challenge, code_challenge_method: "plain" }), { redirect: "manual" }), 400);
    const { fields } = await openPage({ code_challenge: challenge, code_challenge_method: "S256" });
    const { code_challenge: _c, code_challenge_method: _m, ...stripped } = fields;
    await expectJsonError(await postConsent({ ...stripped, email: user.email, password: user.password, decision: "approve" }), 400);
  });

  it("is optional: without a challenge a verifier is not needed", async () => {
    const { code } = await approve();
    expect((await exchange(code)).response.status).toBe(200);
  });
});

describe("client registration", () => {
  it("stores only the secret's hash and refuses bad redirect URIs", async () => {
    const registered = await registerOAuthClient(service.services, { name: " Tidy ", redirectUris: ["https://tidy.example/cb"] });
    expect(registered.client_id).toMatch(/^oc_/);
    expect(registered.client_secret).toMatch(/^cs_/);
    const row = await service.services.db.knex("oauth_clients").where({ id: registered.client_id }).first();
    expect(row).toMatchObject({ name: "Tidy", secret_hash: sha256(registered.client_secret), redirect_uris: ["https://tidy.example/cb"] });
    expect(JSON.stringify(row)).not.toContain(registered.client_secret);

    for (const redirectUris of [[], ["http://tidy.example/cb"], ["https://tidy.example/cb#x"], ["/relative"], ["javascript:alert(1)"]]) {
      await expect(registerOAuthClient(service.services, { name: "Bad", redirectUris })).rejects.toBeInstanceOf(ApiError);
    }
    await expect(registerOAuthClient(service.services, { name: " ", redirectUris: ["https://tidy.example/cb"] })).rejects.toMatchObject({ status: 400 });
  });
});

describe("API keys minted through a grant (issue 31 I2)", () => {
  const mint = async (auth: Record<string, string>, name: string) => {
    const { data, error, response } = await service.clientFor({ auth }).POST("/v1/auth/api-keys", { body: { name, scopes: ["admin"] } });
    expect(response.status, JSON.stringify(error ?? data)).toBe(201);
    return { id: data!.id, auth: { "x-api-key": data!.key } };
  };
  const me = (auth: Record<string, string>) => service.fetch("/v1/auth/me", { headers: auth });

  it("die with the grant, also keys those keys minted; a key minted by the user's own login stays", async () => {
    const owner = await registerUser(service);
    // Grant A ends by a reused refresh token, grant B by a replayed code.
    const a = (await exchange((await approve({ scope: "admin" }, owner)).code)).data!;
    const codeB = (await approve({ scope: "admin" }, owner)).code;
    const b = (await exchange(codeB)).data!;
    const viaA = await mint(bearer(a.access_token), "minted by app A");
    const viaAKey = await mint(viaA.auth, "minted by A's key");
    const viaB = await mint(bearer(b.access_token), "minted by app B");
    const own = await mint(owner.auth, "minted by the owner");
    // Each used once, so each sits in the credential cache when its grant ends.
    for (const key of [viaA, viaAKey, viaB, own]) expect((await me(key.auth)).status).toBe(200);

    const refreshA: TokenRequest = { grant_type: "refresh_token", refresh_token: a.refresh_token, client_id: client.client_id, client_secret: client.client_secret };
    expect((await token(refreshA)).response.status).toBe(200);
    await expectJsonError(await token(refreshA), 401, "unauthorized");
    await expectJsonError(await me(viaA.auth), 401, "unauthorized");
    await expectJsonError(await me(viaAKey.auth), 401, "unauthorized");
    expect((await me(viaB.auth)).status).toBe(200);

    await expectJsonError(await exchange(codeB), 400);
    await expectJsonError(await me(viaB.auth), 401, "unauthorized");
    expect((await me(own.auth)).status).toBe(200);
    const listed = await (await service.fetch("/v1/auth/api-keys", { headers: owner.auth })).json();
    expect(listed.data.map((key: { id: string }) => key.id)).toEqual([own.id]);
  });
});
