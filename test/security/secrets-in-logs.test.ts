import { randomBytes, randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerOAuthClient } from "../../server/areas/auth/oauth/clients.ts";
import { httpSerializers } from "../../server/toolkit/logger.ts";
import { expectOk } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { startSmtpCatcher, type SmtpCatcher } from "../support/smtp-catcher.ts";
import { until } from "../support/wait.ts";

// Issue 31 M3: no log line, at any level, holds a token, key or secret. The whole auth flow runs
// with SMTP set (so the e-mail jobs run on the worker) and the log at its most verbose level, and
// every line is searched for every secret the flow handled, and for anything shaped like one.

const lines: string[] = [];
/** Every secret the flow saw; none may appear in a log line. */
const secrets = new Set<string>();
/** What the service put on the job queue. */
const queued: { task: string; payload: unknown }[] = [];
let service: TestService;
let smtp: SmtpCatcher;

const BASE = "https://persona.test";
const REDIRECT = "https://client.example/cb";

beforeAll(async () => {
  smtp = await startSmtpCatcher();
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...chunk.toString().split("\n").filter(Boolean));
      done();
    },
  });
  const log = pino({ level: "trace", serializers: { ...httpSerializers, err: pino.stdSerializers.err } }, sink);
  service = await startTestService({
    log,
    env: { SMTP_URL: smtp.url, PUBLIC_BASE_URL: BASE, WEBHOOKS_ALLOW_PRIVATE_URLS: "true" },
  });
  const add = service.services.jobs.add;
  service.services.jobs.add = (task, payload, options) => {
    queued.push({ task, payload });
    return add(task, payload, options);
  };
});

afterAll(async () => {
  await service?.close();
  await smtp?.close();
});

/** The text part of a raw message, quoted-printable undone. */
const bodyOf = (raw: string) =>
  raw
    .slice(raw.indexOf("\r\n\r\n") + 4)
    .replace(/=\r\n/g, "")
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));

/** The text of the `count`-th mail to `to` whose text matches `pattern`, and the match. */
async function mailed(to: string, pattern: RegExp, count = 1): Promise<RegExpExecArray> {
  return until(`mail ${pattern} to ${to}`, () => {
    const matches = smtp.received.filter((mail) => mail.to.includes(to)).map((mail) => pattern.exec(bodyOf(mail.raw))).filter((match) => match !== null);
    return matches.length >= count ? matches[count - 1]! : undefined;
  }, 30_000);
}

/** The typed client with these headers. */
const as = (auth: Record<string, string>) => service.clientFor({ auth });

function keep(...values: unknown[]): void {
  for (const value of values) {
    expect(typeof value, String(value)).toBe("string");
    secrets.add(value as string);
  }
}

/** Completed runs of a task, as graphile-worker logs them. */
const completed = (task: string) => lines.filter((line) => line.includes(`(${task},`) && line.includes("Completed task")).length;

describe("the log of a whole auth flow (issue 31 M3)", () => {
  it("holds no token, key, password or secret at the most verbose level; jobs carry no secret either", async () => {
    const suffix = randomBytes(4).toString("hex");
    const email = `logs_${suffix}@example.com`;
    const password = `Initial-pass-${suffix}`;
    keep(password);

    // Register (with an Idempotency-Key, so the stored answer is exercised too) and verify the address.
    const registered = await expectOk(service.api.POST("/v1/auth/register", { body: { email, username: `logs_${suffix}`, password }, headers: { "idempotency-key": randomUUID() } }), 201);
    keep(registered.access_token, registered.refresh_token);
    const session = { authorization: `Bearer ${registered.access_token}` };
    const verifyToken = decodeURIComponent((await mailed(email, /verify-email\?token=(\S+)/))[1]!);
    keep(verifyToken);
    expect((await as(session).POST("/v1/auth/verify-email", { body: { token: verifyToken } })).response.status).toBe(200);

    // A refresh, an API key (used once), a webhook with its signing secret.
    const refreshed = await expectOk(service.api.POST("/v1/auth/refresh", { body: { refresh_token: registered.refresh_token } }));
    keep(refreshed.access_token, refreshed.refresh_token);
    const key = await expectOk(as(session).POST("/v1/auth/api-keys", { headers: { "idempotency-key": randomUUID() }, body: { name: "logs", scopes: ["admin"] } }), 201);
    keep(key.key);
    expect((await as({ "x-api-key": key.key }).GET("/v1/auth/me")).response.status).toBe(200);
    const hook = await expectOk(as(session).POST("/v1/webhooks", { headers: { "idempotency-key": randomUUID() }, body: { url: "http://127.0.0.1:9/hook", events: ["message.created"] } }), 201);
    keep(hook.secret);

    // An OAuth grant: consent, code, tokens, a refresh, a call.
    const client = await registerOAuthClient(service.services, { name: "Log test app", redirectUris: [REDIRECT] });
    keep(client.client_secret);
    const authorize = { client_id: client.client_id, redirect_uri: REDIRECT, scope: "personas:read", state: "s1" };
    const page = await service.fetch(`/v1/oauth/authorize?response_type=code&${new URLSearchParams(authorize).toString().replace(/\+/g, "%20")}`);
    const html = await page.text();
    expect(page.status, html).toBe(200);
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(html)![1]!;
    const consent = await service.fetch("/v1/oauth/authorize", {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ ...authorize, csrf_token: csrf, email, password, decision: "approve" }).toString(),
    });
    expect(consent.status).toBe(303);
    const code = new URL(consent.headers.get("location")!).searchParams.get("code")!;
    keep(code);
    const granted = await expectOk(service.api.POST("/v1/oauth/token", {
      body: { grant_type: "authorization_code", code, redirect_uri: REDIRECT, client_id: client.client_id, client_secret: client.client_secret },
    }));
    keep(granted.access_token, granted.refresh_token);
    const regranted = await expectOk(service.api.POST("/v1/oauth/token", {
      body: { grant_type: "refresh_token", refresh_token: granted.refresh_token, client_id: client.client_id, client_secret: client.client_secret },
    }));
    keep(regranted.access_token, regranted.refresh_token);
    expect((await as({ authorization: `Bearer ${regranted.access_token}` }).GET("/v1/personas")).response.status).toBe(200);

    // A data export: its mailed link is a credential of its own.
    await expectOk(as(session).POST("/v1/auth/export-data"));
    const link = (await mailed(email, /(https:\/\/persona\.test\/v1\/auth\/export-data\/\S+)/))[1]!;
    keep(new URL(link).searchParams.get("signature"));
    expect((await service.fetch(link.slice(BASE.length))).status).toBe(200);

    // Forgot and reset the password, then log in with the new one.
    expect((await service.api.POST("/v1/auth/forgot-password", { body: { email } })).response.status).toBe(200);
    const resetToken = decodeURIComponent((await mailed(email, /reset-password\?token=(\S+)/))[1]!);
    keep(resetToken);
    const newPassword = `Second-pass-${suffix}`;
    keep(newPassword);
    expect((await service.api.POST("/v1/auth/reset-password", { body: { token: resetToken, new_password: newPassword } })).response.status).toBe(200);
    const login = await expectOk(service.api.POST("/v1/auth/login", { body: { email, password: newPassword } }));
    keep(login.access_token, login.refresh_token);

    // The worker logs each job it completes: wait for both mails and the export.
    await until("the jobs' completion lines", () => completed("email_send") >= 2 && completed("data_export") >= 1, 30_000);

    expect(lines.length).toBeGreaterThan(20);
    expect(lines.some((line) => JSON.parse(line).level === 10 || JSON.parse(line).level === 20)).toBe(true);
    for (const secret of secrets) {
      const leaking = lines.filter((line) => line.includes(secret));
      expect(leaking, `a log line holds ${secret.slice(0, 6)}…`).toEqual([]);
    }
    const shapes = [/\b(?:rp|vt)_[A-Za-z0-9_-]{16,}/, /\bpk_[0-9A-Za-z]{40,}/, /eyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,}/, /whsec_[A-Za-z0-9+/]{8,}/, /\bcs_[A-Za-z0-9_-]{16,}/, /signature=[0-9a-f]{16,}/];
    for (const shape of shapes) {
      expect(lines.filter((line) => shape.test(line)), String(shape)).toEqual([]);
    }

    // Jobs carry ids: nothing the queue holds (and graphile-worker keeps in its table) is a secret.
    expect(queued.some((job) => job.task === "email_send")).toBe(true);
    const payloads = JSON.stringify(queued);
    for (const secret of secrets) expect(payloads.includes(secret), `a job payload holds ${secret.slice(0, 6)}…`).toBe(false);
  });
});
