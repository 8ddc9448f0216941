import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { publicBaseUrl } from "../../server/toolkit/config.ts";
import { loadConfig } from "../../server/toolkit/config.ts";
import type { Schemas } from "../../sdk/src/types.ts";
import type { ApiAnswer } from "../support/api.ts";
import { outboxMails, type OutboxMail } from "../support/outbox.ts";
import { sendRaw } from "../support/raw.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";
import { until } from "../support/wait.ts";

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
function waitForMail(to: string, kind: string, count = 1): Promise<OutboxMail> {
  return until(`${kind} mail #${count} to ${to}`, async () => (await outbox(to, kind))[count - 1], 10_000);
}

function tokenIn(mail: OutboxMail): string {
  const match = /\?token=([^\s]+)/.exec(mail.text ?? "");
  expect(match, mail.text ?? "").not.toBeNull();
  return decodeURIComponent(match![1]!);
}

const verify = (token: string, auth: Record<string, string>) => service.clientFor({ auth }).POST("/v1/auth/verify-email", { body: { token } });
const forgot = (email: string) => service.api.POST("/v1/auth/forgot-password", { body: { email } });
const reset = (token: string, newPassword: string) => service.api.POST("/v1/auth/reset-password", { body: { token, new_password: newPassword } });
const login = (email: string, password: string) => service.api.POST("/v1/auth/login", { body: { email, password } });

async function me(auth: Record<string, string>) {
  return service.fetch("/v1/auth/me", { headers: auth });
}

async function expectError(answer: Response | ApiAnswer, status: number, code: string) {
  const [actual, body] = answer instanceof Response ? [answer.status, await answer.json()] : [answer.response.status, answer.error ?? answer.data];
  expect(actual, JSON.stringify(body)).toBe(status);
  expect(body.error.code).toBe(code);
}

/**
 * The clock offset that puts the service's clock `ms` after the issue of the user's newest token of
 * `purpose`: counted from the token itself, not from the steps before, which take real time.
 */
async function offsetFromIssue(user: TestUser, purpose: string, ms: number): Promise<number> {
  const row = await service.services.db.knex("email_tokens").where({ user_id: user.id, purpose }).orderBy("created_at", "desc").first();
  return (row.created_at as Date).getTime() + ms - Date.now();
}

async function verifyTokenOf(user: TestUser): Promise<string> {
  return tokenIn(await waitForMail(user.email, "verify_email"));
}

async function resetTokenOf(user: TestUser, count = 1): Promise<string> {
  const { response } = await forgot(user.email);
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
    const { data, response } = await verify(token, user.auth);
    expect(response.status).toBe(200);
    expect(data).toEqual({ message: "E-mail address verified.", email_verified: true });
    expect((await (await me(user.auth)).json()).email_verified).toBe(true);
  });

  it("a token works once: the second use is 400 invalid_request", async () => {
    const user = await registerUser(service);
    const token = await verifyTokenOf(user);
    expect((await verify(token, user.auth)).response.status).toBe(200);
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

    clockOffsetMs = await offsetFromIssue(early, "verify_email", 24 * HOUR - 1000);
    expect((await verify(earlyToken, { authorization: `Bearer ${earlyKey}` })).response.status).toBe(200);
    clockOffsetMs = await offsetFromIssue(late, "verify_email", 24 * HOUR + 1000);
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
    expect((await verify(token, owner.auth)).response.status).toBe(200);
    expect((await (await me(owner.auth)).json()).email_verified).toBe(true);
  });

  it("needs credentials, a known token of the right purpose, and a well-formed body", async () => {
    const user = await registerUser(service);
    const token = await verifyTokenOf(user);
    await expectError(await verify(token, {}), 401, "unauthorized");
    await expectError(await verify("vt_not-a-real-token", user.auth), 400, "invalid_request");
    await expectError(await sendRaw(service, "POST", "/v1/auth/verify-email", { body: {}, headers: user.auth }), 400, "invalid_request");
    await expectError(await verify("", user.auth), 400, "invalid_request");
    await expectError(await verify("x".repeat(513), user.auth), 400, "invalid_request");
    // A reset token is not a verification token.
    const resetToken = await resetTokenOf(user);
    await expectError(await verify(resetToken, user.auth), 400, "invalid_request");
    // None of that spent the real one.
    expect((await verify(token, user.auth)).response.status).toBe(200);
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
    // A token belongs to a user: the unknown address can have none, so the user's own are counted.
    const tokens = () => service.services.db.knex("email_tokens").where({ user_id: user.id }).count<{ count: string }[]>("* as count");
    const tokensBefore = await tokens();

    // The unknown address first: its mail, were there one, would be on its way before the known one's.
    const missing = await service.api.POST("/v1/auth/forgot-password", { body: { email: unknown }, parseAs: "text" });
    const known = await service.api.POST("/v1/auth/forgot-password", { body: { email: user.email.toUpperCase() }, parseAs: "text" });
    expect(missing.response.status).toBe(known.response.status);
    expect(known.response.status).toBe(200);
    expect(missing.response.headers.get("content-type")).toBe(known.response.headers.get("content-type"));
    const knownBody = known.data!;
    expect(missing.data).toBe(knownBody);
    expect(JSON.parse(knownBody)).toEqual({ message: "If the address is registered, a reset link is on its way." });

    // The mail goes to the stored address, whatever case was typed; mails leave in the order they
    // were asked for, so once the known one is in the outbox, one to the unknown address would be too.
    const mail = await waitForMail(user.email, "reset_password");
    expect(mail.text).toContain("https://persona.test/reset-password?token=rp_");
    expect(await service.services.db.knex("email_outbox").whereRaw("lower(\"to\") = lower(?)", [unknown])).toHaveLength(0);
    const tokensAfter = await tokens();
    expect(Number(tokensAfter[0]!.count)).toBe(Number(tokensBefore[0]!.count) + 1);
  });

  // The two answers take the same path: one statement issues a token only where the address is
  // known, and the mail is kept and sent after the answer, so nothing the caller can time waits for
  // it. Shown by holding the mail: a known address is answered while its mail is still held.
  it("answers a known address without waiting for its mail, as it answers an unknown one", async () => {
    const user = await registerUser(service);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const kept: string[] = [];
    const { email } = service.services.providers;
    const keep = email.keep.bind(email);
    vi.spyOn(email, "keep").mockImplementation(async (mail) => {
      kept.push(mail.to);
      await held;
      return keep(mail);
    });
    try {
      expect((await forgot(user.email)).response.status).toBe(200);
      expect((await forgot(`ghost_${Date.now()}@example.com`)).response.status).toBe(200);
      await until("the known address's mail to be kept", async () => kept.length === 1);
      expect(kept).toEqual([user.email]);
    } finally {
      release();
    }
    await waitForMail(user.email, "reset_password");
  });


  it("rejects a malformed address with 400", async () => {
    await expectError(await forgot("not-an-email"), 400, "invalid_request");
    await expectError(await sendRaw(service, "POST", "/v1/auth/forgot-password", { body: {} }), 400, "invalid_request");
  });
});

describe("reset-password", () => {
  it("sets the new password and ends every session of the user", async () => {
    const user = await registerUser(service);
    const second = (await login(user.email, user.password)).data!;
    const token = await resetTokenOf(user);

    const { data, response } = await reset(token, "Brand-new-pass7");
    expect(response.status).toBe(200);
    expect(data).toEqual({ message: "Password changed. Please log in again.", revoked: { sessions: 2, oauth_grants: 0, api_keys: 0 } });

    await expectError(await login(user.email, user.password), 401, "unauthorized");
    const fresh = await login(user.email, "Brand-new-pass7");
    expect(fresh.response.status).toBe(200);
    const freshBody = fresh.data!;

    for (const refresh of [user.refreshToken, second.refresh_token]) {
      await expectError(await service.api.POST("/v1/auth/refresh", { body: { refresh_token: refresh } }), 401, "unauthorized");
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
    expect((await reset(newer, "Brand-new-pass7")).response.status).toBe(200);
    await expectError(await reset(newer, "Another-pass8"), 400, "invalid_request");
    await expectError(await reset(older, "Another-pass8"), 400, "invalid_request");
    expect((await login(user.email, "Brand-new-pass7")).response.status).toBe(200);
  });

  it("a token lives 1 hour: valid a second before, 400 a second after", async () => {
    const early = await registerUser(service);
    const late = await registerUser(service);
    const earlyToken = await resetTokenOf(early);
    const lateToken = await resetTokenOf(late);
    clockOffsetMs = await offsetFromIssue(early, "reset_password", HOUR - 1000);
    expect((await reset(earlyToken, "Brand-new-pass7")).response.status).toBe(200);
    clockOffsetMs = await offsetFromIssue(late, "reset_password", HOUR + 1000);
    await expectError(await reset(lateToken, "Brand-new-pass7"), 400, "invalid_request");
    expect((await login(late.email, late.password)).response.status).toBe(200);
  });

  it("a weak new password is 400 and does not spend the token", async () => {
    const user = await registerUser(service);
    const token = await resetTokenOf(user);
    for (const weak of ["Short1", "no-digits-Here", "no-upper-case-9", "A1" + "x".repeat(127)]) {
      await expectError(await reset(token, weak), 400, "invalid_request");
    }
    await expectError(await sendRaw(service, "POST", "/v1/auth/reset-password", { body: { token } }), 400, "invalid_request");
    expect((await login(user.email, user.password)).response.status).toBe(200);
    expect((await reset(token, "Brand-new-pass7")).response.status).toBe(200);
  });

  it("refuses unknown tokens and verification tokens, changing nothing", async () => {
    const user = await registerUser(service);
    const verifyToken = await verifyTokenOf(user);
    await expectError(await reset("rp_not-a-real-token", "Brand-new-pass7"), 400, "invalid_request");
    await expectError(await reset(verifyToken, "Brand-new-pass7"), 400, "invalid_request");
    expect((await login(user.email, user.password)).response.status).toBe(200);
    expect((await me(user.auth)).status).toBe(200);
    // The verification token was not spent by the failed reset.
    expect((await verify(verifyToken, user.auth)).response.status).toBe(200);
  });

  it("revokes every API key of the user, cached ones too, and says what it revoked (issue 31 L2)", async () => {
    const user = await registerUser(service);
    const other = await registerUser(service);
    const keyOf = async (owner: TestUser, scopes: Schemas["ApiKeyScope"][]) => {
      const { data, error, response } = await service.clientFor(owner).POST("/v1/auth/api-keys", { body: { name: "before the reset", scopes } });
      expect(response.status, JSON.stringify(error ?? data)).toBe(201);
      return { "x-api-key": data!.key };
    };
    const admin = await keyOf(user, ["admin"]);
    const reader = await keyOf(user, ["personas:read"]);
    const othersKey = await keyOf(other, ["admin"]);
    // Used once each, so each sits in the credential cache when the reset comes.
    expect((await me(admin)).status).toBe(200);
    expect((await service.fetch("/v1/personas", { headers: reader })).status).toBe(200);
    expect((await me(othersKey)).status).toBe(200);
    const second = (await login(user.email, user.password)).data!;
    expect(second.access_token).toBeDefined();

    const token = await resetTokenOf(user);
    const mail = await waitForMail(user.email, "reset_password");
    expect(mail.text).toMatch(/revokes every API key/);

    const { data, response } = await reset(token, "Brand-new-pass7");
    expect(response.status).toBe(200);
    expect(data).toEqual({
      message: "Password changed. Please log in again.",
      revoked: { sessions: 2, oauth_grants: 0, api_keys: 2 },
    });
    await expectError(await me(admin), 401, "unauthorized");
    await expectError(await service.fetch("/v1/personas", { headers: reader }), 401, "unauthorized");
    expect((await me(othersKey)).status).toBe(200);
    const fresh = (await login(user.email, "Brand-new-pass7")).data!;
    const listed = await service.fetch("/v1/auth/api-keys", { headers: { authorization: `Bearer ${fresh.access_token}` } });
    expect((await listed.json()).data).toEqual([]);
  });

  it("one user's reset token changes only that user's password", async () => {
    const owner = await registerUser(service);
    const other = await registerUser(service);
    const token = await resetTokenOf(owner);
    expect((await reset(token, "Brand-new-pass7")).response.status).toBe(200);
    expect((await login(other.email, other.password)).response.status).toBe(200);
    expect((await me(other.auth)).status).toBe(200);
    await expectError(await login(other.email, "Brand-new-pass7"), 401, "unauthorized");
  });
});
