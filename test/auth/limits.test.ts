import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { registerOAuthClient, type RegisteredClient } from "../../server/areas/auth/oauth/clients.ts";
import { jsonHeaders, startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";

// Every test client is 127.0.0.1, so the per-e-mail limit is tested with a high per-IP limit and
// the per-IP limit with many e-mails and a high per-e-mail limit.
const PER_EMAIL = 3;
const PER_IP = 5;
const WINDOW_S = 15 * 60;

const post = (service: TestService, path: string, body: unknown, headers: Record<string, string> = jsonHeaders) =>
  service.fetch(path, { method: "POST", headers, body: typeof body === "string" ? body : JSON.stringify(body) });
const login = (service: TestService, email: string, password: string) => post(service, "/v1/auth/login", { email, password });
const forgot = (service: TestService, email: string) => post(service, "/v1/auth/forgot-password", { email });
const unknownEmail = () => `nobody_${randomBytes(4).toString("hex")}@example.com`;

async function expectRateLimited(response: Response) {
  const body = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(429);
  expect(body.error.code).toBe("rate_limited");
  const retryAfter = Number(response.headers.get("retry-after"));
  expect(response.headers.get("retry-after")).toMatch(/^\d+$/);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(WINDOW_S);
  expect(body.error.details.retry_after).toBe(retryAfter);
  return body as { error: { code: string; message: string; details: { retry_after: number } } };
}

/** Anything but a refusal by the limit: forgot-password may still answer 501 while its area is built. */
async function expectNotLimited(response: Response, allowed: number[]) {
  const text = await response.text();
  expect(allowed, `${response.status} ${text}`).toContain(response.status);
}

const authRows = async (service: TestService) =>
  service.services.db.knex("rate_limits").where("key", "like", "auth-%").select("key");

describe("per e-mail limits", () => {
  let service: TestService;
  let alice: TestUser;
  let bob: TestUser;

  beforeAll(async () => {
    service = await startTestService({ env: { AUTH_ATTEMPTS_PER_EMAIL: String(PER_EMAIL), AUTH_ATTEMPTS_PER_IP: "100000" } });
    alice = await registerUser(service);
    bob = await registerUser(service);
  });

  afterAll(async () => {
    await service?.close();
  });

  beforeEach(async () => {
    await service.services.db.knex("rate_limits").delete();
  });

  it("lets a login through below the limit", async () => {
    const response = await login(service, alice.email, alice.password);
    expect(response.status).toBe(200);
    expect((await response.json()).user.id).toBe(alice.id);
  });

  it("refuses the (N+1)th login for one e-mail with 429 and Retry-After, even with the right password", async () => {
    for (let i = 0; i < PER_EMAIL; i++) {
      const response = await login(service, alice.email, "Wrong-password-1");
      await expectNotLimited(response, [401]);
    }
    const refused = await login(service, alice.email, alice.password);
    await expectRateLimited(refused);
    // The X-RateLimit-* headers are the general limit's, not the auth limit's.
    expect(Number(refused.headers.get("x-ratelimit-limit"))).toBe(service.services.config.rateLimitPerMinute);
    expect(Number(refused.headers.get("x-ratelimit-remaining"))).toBeGreaterThan(0);
  });

  it("counts an e-mail whatever its case", async () => {
    const variants = [alice.email.toUpperCase(), alice.email, alice.email.replace(/^./, (c) => c.toUpperCase())];
    for (const email of variants.slice(0, PER_EMAIL)) await expectNotLimited(await login(service, email, "Wrong-password-1"), [401]);
    await expectRateLimited(await login(service, alice.email.toUpperCase(), alice.password));
  });

  it("leaves another e-mail unaffected by one e-mail's limit", async () => {
    for (let i = 0; i <= PER_EMAIL; i++) await login(service, alice.email, "Wrong-password-1");
    await expectRateLimited(await login(service, alice.email, alice.password));
    const response = await login(service, bob.email, bob.password);
    expect(response.status).toBe(200);
    expect((await response.json()).user.id).toBe(bob.id);
  });

  it("answers the same 429 for a registered and an unknown e-mail", async () => {
    const unknown = unknownEmail();
    for (let i = 0; i < PER_EMAIL; i++) {
      await expectNotLimited(await login(service, alice.email, "Wrong-password-1"), [401]);
      await expectNotLimited(await login(service, unknown, "Wrong-password-1"), [401]);
    }
    const known = await login(service, alice.email, "Wrong-password-1");
    const other = await login(service, unknown, "Wrong-password-1");
    const [a, b] = [await expectRateLimited(known), await expectRateLimited(other)];
    // The windows opened milliseconds apart, so the seconds to wait may differ by one at most.
    expect(Math.abs(a.error.details.retry_after - b.error.details.retry_after)).toBeLessThanOrEqual(1);
    const shape = (body: unknown) => JSON.stringify(body).replace(/\d+/g, "N");
    expect(shape(a)).toBe(shape(b));
    const headerNames = (response: Response) => [...response.headers.keys()].filter((name) => name !== "date" && name !== "x-request-id").sort();
    expect(headerNames(known)).toEqual(headerNames(other));
  });

  it("limits forgot-password per e-mail, separately from other addresses", async () => {
    for (let i = 0; i < PER_EMAIL; i++) await expectNotLimited(await forgot(service, alice.email), [200, 501]);
    await expectRateLimited(await forgot(service, alice.email.toUpperCase()));
    await expectNotLimited(await forgot(service, bob.email), [200, 501]);
  });

  it("shares one count per e-mail between login and forgot-password", async () => {
    for (let i = 0; i < PER_EMAIL; i++) await expectNotLimited(await forgot(service, alice.email), [200, 501]);
    await expectRateLimited(await login(service, alice.email, alice.password));
  });

  it("does not count requests the contract refuses, and writes nothing for them", async () => {
    for (let i = 0; i <= PER_EMAIL; i++) {
      const response = await login(service, "not-an-email", "");
      expect(response.status).toBe(400);
      expect((await response.json()).error.code).toBe("invalid_request");
    }
    expect(await authRows(service)).toEqual([]);
    expect((await login(service, alice.email, alice.password)).status).toBe(200);
  });

  it("keeps no e-mail address in the counter table", async () => {
    await login(service, alice.email, "Wrong-password-1");
    const keys = (await authRows(service)).map((row) => row.key as string);
    expect(keys.some((key) => key.startsWith("auth-email:"))).toBe(true);
    expect(keys.some((key) => key.startsWith("auth-ip:"))).toBe(true);
    expect(keys.join(" ").toLowerCase()).not.toContain(alice.email.toLowerCase());
  });
});

describe("per IP limits", () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ env: { AUTH_ATTEMPTS_PER_IP: String(PER_IP), AUTH_ATTEMPTS_PER_EMAIL: "100000" } });
  });

  afterAll(async () => {
    await service?.close();
  });

  beforeEach(async () => {
    await service.services.db.knex("rate_limits").delete();
  });

  it("refuses the (N+1)th registration from one IP, and nothing of it is written", async () => {
    const users: TestUser[] = [];
    for (let i = 0; i < PER_IP; i++) users.push(await registerUser(service));
    const email = unknownEmail();
    const refused = await post(service, "/v1/auth/register", { email, username: `u_${randomBytes(4).toString("hex")}`, password: "Correct-horse-9" });
    await expectRateLimited(refused);
    expect(await service.services.db.knex("users").where({ email }).first()).toBeUndefined();
    // Calls that are not auth attempts are not held back, and sessions keep working.
    expect((await service.fetch("/healthz")).status).toBe(200);
    expect((await service.fetch("/v1/auth/me", { headers: users[0]!.auth })).status).toBe(200);
  });

  it("counts login, forgot-password and token calls from one IP together, over many e-mails", async () => {
    await expectNotLimited(await login(service, unknownEmail(), "Wrong-password-1"), [401]);
    await expectNotLimited(await forgot(service, unknownEmail()), [200, 501]);
    const token = () => post(service, "/v1/oauth/token", { grant_type: "refresh_token", client_id: "nope", client_secret: "nope", refresh_token: "nope" });
    await expectNotLimited(await token(), [400, 401, 501]);
    for (let i = 3; i < PER_IP; i++) await expectNotLimited(await login(service, unknownEmail(), "Wrong-password-1"), [401]);
    await expectRateLimited(await login(service, unknownEmail(), "Wrong-password-1"));
    await expectRateLimited(await forgot(service, unknownEmail()));
    await expectRateLimited(await token());
  });

  it("limits form-encoded token calls the same way", async () => {
    const form = { "content-type": "application/x-www-form-urlencoded" };
    const body = "grant_type=refresh_token&client_id=nope&client_secret=nope&refresh_token=nope";
    for (let i = 0; i < PER_IP; i++) await expectNotLimited(await post(service, "/v1/oauth/token", body, form), [400, 401, 501]);
    await expectRateLimited(await post(service, "/v1/oauth/token", body, form));
  });
});

// The consent form checks a password, so it is a login by another door (issue 24, item 1).
describe("the OAuth consent form", () => {
  let service: TestService;
  let alice: TestUser;
  let client: RegisteredClient;
  const REDIRECT = "https://client.example/cb";

  beforeAll(async () => {
    service = await startTestService({ env: { AUTH_ATTEMPTS_PER_EMAIL: String(PER_EMAIL), AUTH_ATTEMPTS_PER_IP: String(PER_IP) } });
    alice = await registerUser(service);
    client = await registerOAuthClient(service.services, { name: "Limits app", redirectUris: [REDIRECT] });
  });

  afterAll(async () => {
    await service?.close();
  });

  beforeEach(async () => {
    await service.services.db.knex("rate_limits").delete();
  });

  async function consent(email: string, password: string, decision = "approve"): Promise<Response> {
    const params = new URLSearchParams({ response_type: "code", client_id: client.client_id, redirect_uri: REDIRECT, scope: "personas:read", state: "st" });
    const page = await service.fetch(`/v1/oauth/authorize?${params.toString().replace(/\+/g, "%20")}`);
    const html = await page.text();
    expect(page.status, html).toBe(200);
    const fields = Object.fromEntries([...html.matchAll(/<input type="hidden" name="([a-z_]+)" value="([^"]*)">/g)].map((m) => [m[1]!, m[2]!.replace(/&amp;/g, "&")]));
    return service.fetch("/v1/oauth/authorize", {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ ...fields, email, password, decision }).toString(),
    });
  }

  it("counts password checks per e-mail and refuses the right password once the limit is reached", async () => {
    for (let i = 0; i < PER_EMAIL; i++) await expectNotLimited(await consent(alice.email, "Wrong-password-1"), [200]);
    await expectRateLimited(await consent(alice.email, alice.password));
  });

  it("shares the per-e-mail count with login, in both directions", async () => {
    for (let i = 0; i < PER_EMAIL; i++) await expectNotLimited(await login(service, alice.email, "Wrong-password-1"), [401]);
    await expectRateLimited(await consent(alice.email, alice.password));
    await service.services.db.knex("rate_limits").delete();
    for (let i = 0; i < PER_EMAIL; i++) await expectNotLimited(await consent(alice.email, "Wrong-password-1"), [200]);
    await expectRateLimited(await login(service, alice.email, alice.password));
  });

  it("counts per IP over many e-mails", async () => {
    for (let i = 0; i < PER_IP; i++) await expectNotLimited(await consent(unknownEmail(), "Wrong-password-1"), [200]);
    await expectRateLimited(await consent(unknownEmail(), "Wrong-password-1"));
  });

  it("does not count a denial, which checks no password", async () => {
    for (let i = 0; i <= PER_IP; i++) await expectNotLimited(await consent(alice.email, "x", "deny"), [303]);
    expect(await authRows(service)).toEqual([]);
    expect((await consent(alice.email, alice.password)).status).toBe(303);
  });
});
