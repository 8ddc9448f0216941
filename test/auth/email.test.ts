import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { publicBaseUrl } from "../../server/toolkit/config.ts";
import { loadConfig } from "../../server/toolkit/config.ts";
import { outboxMails, type OutboxMail } from "../support/outbox.ts";
import { jsonHeaders, startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";

// E-mail verification and password reset, read back through the outbox (no SMTP_URL here).
let service: TestService;
let clockOffsetMs = 0;
const HOUR = 60 * 60 * 1000;

beforeAll(async () => {
  service = await startTestService({
    env: { PUBLIC_BASE_URL: "https://persona.test/" },
    now: () => new Date(Date.now() + clockOffsetMs),
  });
});

afterAll(async () => {
  await service?.close();
});

afterEach(() => {
  clockOffsetMs = 0;
});

const outbox = (to: string, kind: string): Promise<OutboxMail[]> => outboxMails(service, { to, kind });

/** Mails leave after the response: wait until the `count`-th one of the kind has reached the outbox. */
async function waitForMail(to: string, kind: string, count = 1): Promise<OutboxMail> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const rows = await outbox(to, kind);
    if (rows.length >= count) return rows[count - 1]!;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no ${kind} mail #${count} to ${to}`);
}

function tokenIn(mail: OutboxMail): string {
  const match = /\?token=([^\s]+)/.exec(mail.text ?? "");
  expect(match, mail.text ?? "").not.toBeNull();
  return decodeURIComponent(match![1]!);
}

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  service.fetch(path, { method: "POST", headers: { ...jsonHeaders, ...headers }, body: JSON.stringify(body) });

const verify = (token: string, auth: Record<string, string>) => post("/v1/auth/verify-email", { token }, auth);
const forgot = (email: string) => post("/v1/auth/forgot-password", { email });
const reset = (token: string, newPassword: string) => post("/v1/auth/reset-password", { token, new_password: newPassword });
const login = (email: string, password: string) => post("/v1/auth/login", { email, password });

async function me(auth: Record<string, string>) {
  return service.fetch("/v1/auth/me", { headers: auth });
}

async function expectError(response: Response, status: number, code: string) {
  const body = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(status);
  expect(body.error.code).toBe(code);
}

async function verifyTokenOf(user: TestUser): Promise<string> {
  return tokenIn(await waitForMail(user.email, "verify_email"));
}

async function resetTokenOf(user: TestUser, count = 1): Promise<string> {
  const response = await forgot(user.email);
  expect(response.status).toBe(200);
  return tokenIn(await waitForMail(user.email, "reset_password", count));
}

describe("e-mail verification", () => {
  it("registration mails a link with a token; the token verifies the address", async () => {
    const user = await registerUser(service);
    const mail = await waitForMail(user.email, "verify_email");
    expect(mail.text).toContain("https://persona.test/verify-email?token=vt_");
    const token = tokenIn(mail);
    expect(mail.text).toContain(token);
    // The outbox keeps the mail sealed (issue 31 M3), email_tokens only the token's hash.
    const kept = await service.services.db.knex("email_outbox").where({ id: mail.id }).first();
    expect(kept.text_sealed).toMatch(/^v1\./);
    expect(JSON.stringify(kept)).not.toContain(token);
    const stored = await service.services.db.knex("email_tokens").where({ user_id: user.id });
    expect(stored).toHaveLength(1);
    expect(stored[0].token_hash).not.toContain(token);
    expect(stored[0].purpose).toBe("verify_email");

    expect((await (await me(user.auth)).json()).email_verified).toBe(false);
    const response = await verify(token, user.auth);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ message: "E-mail address verified.", email_verified: true });
    expect((await (await me(user.auth)).json()).email_verified).toBe(true);
  });

  it("a token works once: the second use is 400 invalid_request", async () => {
    const user = await registerUser(service);
    const token = await verifyTokenOf(user);
    expect((await verify(token, user.auth)).status).toBe(200);
    await expectError(await verify(token, user.auth), 400, "invalid_request");
  });

  it("a token lives 24 hours: valid a second before, 400 a second after", async () => {
    const early = await registerUser(service);
    const late = await registerUser(service);
    const earlyToken = await verifyTokenOf(early);
    const lateToken = await verifyTokenOf(late);
    // API keys do not expire, unlike the 1-hour access tokens, so they survive the clock move.
    const earlyKey = await apiKeyFor(service, early);
    const lateKey = await apiKeyFor(service, late);

    clockOffsetMs = 24 * HOUR - 1000;
    expect((await verify(earlyToken, { authorization: `Bearer ${earlyKey}` })).status).toBe(200);
    clockOffsetMs = 24 * HOUR + 1000;
    await expectError(await verify(lateToken, { authorization: `Bearer ${lateKey}` }), 400, "invalid_request");
    expect((await (await me({ authorization: `Bearer ${lateKey}` })).json()).email_verified).toBe(false);
  });

  it("another user's token is refused and stays usable by its owner", async () => {
    const owner = await registerUser(service);
    const intruder = await registerUser(service);
    const token = await verifyTokenOf(owner);
    await expectError(await verify(token, intruder.auth), 400, "invalid_request");
    expect((await (await me(intruder.auth)).json()).email_verified).toBe(false);
    expect((await (await me(owner.auth)).json()).email_verified).toBe(false);
    expect((await verify(token, owner.auth)).status).toBe(200);
    expect((await (await me(owner.auth)).json()).email_verified).toBe(true);
  });

  it("needs credentials, a known token of the right purpose, and a well-formed body", async () => {
    const user = await registerUser(service);
    const token = await verifyTokenOf(user);
    await expectError(await verify(token, {}), 401, "unauthorized");
    await expectError(await verify("vt_not-a-real-token", user.auth), 400, "invalid_request");
    await expectError(await post("/v1/auth/verify-email", {}, user.auth), 400, "invalid_request");
    await expectError(await verify("", user.auth), 400, "invalid_request");
    await expectError(await verify("x".repeat(513), user.auth), 400, "invalid_request");
    // A reset token is not a verification token.
    const resetToken = await resetTokenOf(user);
    await expectError(await verify(resetToken, user.auth), 400, "invalid_request");
    // None of that spent the real one.
    expect((await verify(token, user.auth)).status).toBe(200);
  });

  it("links fall back to http://HOST:PORT without PUBLIC_BASE_URL", () => {
    expect(publicBaseUrl(loadConfig({ HOST: "10.0.0.5", PORT: "8080" }))).toBe("http://10.0.0.5:8080");
    expect(publicBaseUrl(loadConfig({ PUBLIC_BASE_URL: "https://api.example.com/" }))).toBe("https://api.example.com");
  });
});

describe("forgot-password", () => {
  it("answers a known and an unknown address alike, and mails only the known one", async () => {
    const user = await registerUser(service);
    await waitForMail(user.email, "verify_email");
    const unknown = `nobody_${Date.now()}@example.com`;
    const tokensBefore = await service.services.db.knex("email_tokens").count<{ count: string }[]>("* as count");

    const known = await forgot(user.email.toUpperCase());
    const missing = await forgot(unknown);
    expect(missing.status).toBe(known.status);
    expect(known.status).toBe(200);
    expect(missing.headers.get("content-type")).toBe(known.headers.get("content-type"));
    const knownBody = await known.text();
    expect(await missing.text()).toBe(knownBody);
    expect(JSON.parse(knownBody)).toEqual({ message: "If the address is registered, a reset link is on its way." });

    // The mail goes to the stored address, whatever case was typed.
    const mail = await waitForMail(user.email, "reset_password");
    expect(mail.text).toContain("https://persona.test/reset-password?token=rp_");
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await service.services.db.knex("email_outbox").whereRaw("lower(\"to\") = lower(?)", [unknown])).toHaveLength(0);
    const tokensAfter = await service.services.db.knex("email_tokens").count<{ count: string }[]>("* as count");
    expect(Number(tokensAfter[0]!.count)).toBe(Number(tokensBefore[0]!.count) + 1);
  });

  it("takes about the same time for a known and an unknown address", async () => {
    const user = await registerUser(service);
    const timings = { known: [] as number[], unknown: [] as number[] };
    const timed = async (email: string) => {
      const started = performance.now();
      const response = await forgot(email);
      await response.text();
      expect(response.status).toBe(200);
      return performance.now() - started;
    };
    await timed(user.email); // warm-up
    for (let i = 0; i < 10; i++) {
      timings.known.push(await timed(user.email));
      timings.unknown.push(await timed(`ghost_${i}_${Date.now()}@example.com`));
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    // A sanity bound only, not a benchmark: it catches a path that waits for the mail or skips the database.
    expect(Math.abs(median(timings.known) - median(timings.unknown))).toBeLessThan(50);
  });

  it("rejects a malformed address with 400", async () => {
    await expectError(await forgot("not-an-email"), 400, "invalid_request");
    await expectError(await post("/v1/auth/forgot-password", {}), 400, "invalid_request");
  });
});

describe("reset-password", () => {
  it("sets the new password and ends every session of the user", async () => {
    const user = await registerUser(service);
    const second = await (await login(user.email, user.password)).json();
    const token = await resetTokenOf(user);

    const response = await reset(token, "Brand-new-pass7");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ message: "Password changed. Please log in again.", revoked: { sessions: 2, oauth_grants: 0, api_keys: 0 } });

    await expectError(await login(user.email, user.password), 401, "unauthorized");
    const fresh = await login(user.email, "Brand-new-pass7");
    expect(fresh.status).toBe(200);
    const freshBody = await fresh.json();

    for (const refresh of [user.refreshToken, second.refresh_token]) {
      await expectError(await post("/v1/auth/refresh", { refresh_token: refresh }), 401, "unauthorized");
    }
    for (const access of [user.accessToken, second.access_token]) {
      await expectError(await me({ authorization: `Bearer ${access}` }), 401, "unauthorized");
    }
    // The login made after the reset is unaffected.
    expect((await me({ authorization: `Bearer ${freshBody.access_token}` })).status).toBe(200);
  });

  it("a token works once, and a reset spends older reset links too", async () => {
    const user = await registerUser(service);
    const older = await resetTokenOf(user, 1);
    const newer = await resetTokenOf(user, 2);
    expect((await reset(newer, "Brand-new-pass7")).status).toBe(200);
    await expectError(await reset(newer, "Another-pass8"), 400, "invalid_request");
    await expectError(await reset(older, "Another-pass8"), 400, "invalid_request");
    expect((await login(user.email, "Brand-new-pass7")).status).toBe(200);
  });

  it("a token lives 1 hour: valid a second before, 400 a second after", async () => {
    const early = await registerUser(service);
    const late = await registerUser(service);
    const earlyToken = await resetTokenOf(early);
    const lateToken = await resetTokenOf(late);
    clockOffsetMs = HOUR - 1000;
    expect((await reset(earlyToken, "Brand-new-pass7")).status).toBe(200);
    clockOffsetMs = HOUR + 1000;
    await expectError(await reset(lateToken, "Brand-new-pass7"), 400, "invalid_request");
    expect((await login(late.email, late.password)).status).toBe(200);
  });

  it("a weak new password is 400 and does not spend the token", async () => {
    const user = await registerUser(service);
    const token = await resetTokenOf(user);
    for (const weak of ["Short1", "no-digits-Here", "no-upper-case-9", "A1" + "x".repeat(127)]) {
      await expectError(await reset(token, weak), 400, "invalid_request");
    }
    await expectError(await post("/v1/auth/reset-password", { token }), 400, "invalid_request");
    expect((await login(user.email, user.password)).status).toBe(200);
    expect((await reset(token, "Brand-new-pass7")).status).toBe(200);
  });

  it("refuses unknown tokens and verification tokens, changing nothing", async () => {
    const user = await registerUser(service);
    const verifyToken = await verifyTokenOf(user);
    await expectError(await reset("rp_not-a-real-token", "Brand-new-pass7"), 400, "invalid_request");
    await expectError(await reset(verifyToken, "Brand-new-pass7"), 400, "invalid_request");
    expect((await login(user.email, user.password)).status).toBe(200);
    expect((await me(user.auth)).status).toBe(200);
    // The verification token was not spent by the failed reset.
    expect((await verify(verifyToken, user.auth)).status).toBe(200);
  });

  it("revokes every API key of the user, cached ones too, and says what it revoked (issue 31 L2)", async () => {
    const user = await registerUser(service);
    const other = await registerUser(service);
    const keyOf = async (owner: TestUser, scopes: string[]) => {
      const response = await post("/v1/auth/api-keys", { name: "before the reset", scopes }, owner.auth);
      const body = await response.json();
      expect(response.status, JSON.stringify(body)).toBe(201);
      return { "x-api-key": body.key as string };
    };
    const admin = await keyOf(user, ["admin"]);
    const reader = await keyOf(user, ["personas:read"]);
    const othersKey = await keyOf(other, ["admin"]);
    // Used once each, so each sits in the credential cache when the reset comes.
    expect((await me(admin)).status).toBe(200);
    expect((await service.fetch("/v1/personas", { headers: reader })).status).toBe(200);
    expect((await me(othersKey)).status).toBe(200);
    const second = await (await login(user.email, user.password)).json();
    expect(second.access_token).toBeDefined();

    const token = await resetTokenOf(user);
    const mail = await waitForMail(user.email, "reset_password");
    expect(mail.text).toMatch(/revokes every API key/);

    const response = await reset(token, "Brand-new-pass7");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      message: "Password changed. Please log in again.",
      revoked: { sessions: 2, oauth_grants: 0, api_keys: 2 },
    });
    await expectError(await me(admin), 401, "unauthorized");
    await expectError(await service.fetch("/v1/personas", { headers: reader }), 401, "unauthorized");
    expect((await me(othersKey)).status).toBe(200);
    const fresh = await (await login(user.email, "Brand-new-pass7")).json();
    const listed = await service.fetch("/v1/auth/api-keys", { headers: { authorization: `Bearer ${fresh.access_token}` } });
    expect((await listed.json()).data).toEqual([]);
  });

  it("one user's reset token changes only that user's password", async () => {
    const owner = await registerUser(service);
    const other = await registerUser(service);
    const token = await resetTokenOf(owner);
    expect((await reset(token, "Brand-new-pass7")).status).toBe(200);
    expect((await login(other.email, other.password)).status).toBe(200);
    expect((await me(other.auth)).status).toBe(200);
    await expectError(await login(other.email, "Brand-new-pass7"), 401, "unauthorized");
  });
});
