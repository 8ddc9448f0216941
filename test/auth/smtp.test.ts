import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { outboxMails } from "../support/outbox.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { startSmtpCatcher, type SmtpCatcher } from "../support/smtp-catcher.ts";
import { registerUser } from "../support/users.ts";

// The real provider: mails reach an SMTP server on loopback, and a refusing server fails no request.
let service: TestService;
let smtp: SmtpCatcher;
// Flipped by the test of a refusing server: one server and one service keep the file fast.
let refuseRecipients = false;
let refused = 0;

beforeAll(async () => {
  smtp = await startSmtpCatcher({ refuse: () => refuseRecipients && ++refused > 0 });
  service = await startTestService({ env: { SMTP_URL: smtp.url, PUBLIC_BASE_URL: "https://persona.test" } });
});

afterAll(async () => {
  await service?.close();
  await smtp?.close();
});

async function until<T>(probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
  for (let attempt = 0; attempt < 250; attempt++) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error("timed out waiting");
}

/** The text part of a raw message, with quoted-printable soft breaks and escapes undone. */
const bodyOf = (raw: string) =>
  raw
    .slice(raw.indexOf("\r\n\r\n") + 4)
    .replace(/=\r\n/g, "")
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));

describe("mail through SMTP", () => {
  it("registration sends the verification mail to the SMTP server and marks the outbox row sent", async () => {
    expect(service.services.providers.email.kind).toBe("smtp");
    const user = await registerUser(service);

    const message = await until(() => smtp.received.find((mail) => mail.to.includes(user.email)));
    expect(message.raw).toMatch(/^Subject: Confirm your e-mail address/m);
    const text = bodyOf(message.raw);
    const token = /https:\/\/persona\.test\/verify-email\?token=(vt_[A-Za-z0-9_-]+)/.exec(text)?.[1];
    expect(token, text).toBeDefined();

    // Once the server took it, the outbox keeps the mail's record but not its text (issue 31 M3).
    const row = await until(async () => {
      const found = await service.services.db.knex("email_outbox").where({ to: user.email, kind: "verify_email" }).first();
      return found?.sent_at ? found : undefined;
    });
    expect(row).toMatchObject({ text: null, text_sealed: null, subject: "Confirm your e-mail address for Persona" });

    // The mailed token is the real one.
    const verified = await service.fetch("/v1/auth/verify-email", {
      method: "POST",
      headers: { "content-type": "application/json", ...user.auth },
      body: JSON.stringify({ token }),
    });
    expect(verified.status).toBe(200);
  });

  it("a mail the server refused is sent again by its job once the server takes it, once (issue 13, item 18)", async () => {
    refuseRecipients = true;
    const before = refused;
    const user = await registerUser(service);
    await until(() => (refused > before ? true : undefined));
    refuseRecipients = false;
    // graphile-worker retries after about e^1 s.
    for (let waited = 0; waited < 20_000 && !smtp.received.some((mail) => mail.to.includes(user.email)); waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(smtp.received.filter((mail) => mail.to.includes(user.email))).toHaveLength(1);
    const rows = await until(async () => {
      const found = await service.services.db.knex("email_outbox").where({ to: user.email, kind: "verify_email" });
      return found.length && found.every((row) => row.sent_at) ? found : undefined;
    });
    expect(rows).toHaveLength(1);
  });

  it("a server that refuses the recipient fails no registration; the mail stays unsent in the outbox", async () => {
    refuseRecipients = true;
    const user = await registerUser(service);
    const me = await service.fetch("/v1/auth/me", { headers: user.auth });
    expect(me.status).toBe(200);

    await until(() => (refused > 0 ? true : undefined));
    await until(() => service.services.db.knex("email_outbox").where({ to: user.email, kind: "verify_email" }).first());
    // Give the failed send time to have (wrongly) marked the row.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const [after] = await outboxMails(service, { to: user.email, kind: "verify_email" });
    expect(after!.sent_at).toBeNull();
    expect(smtp.received.filter((mail) => mail.to.includes(user.email))).toHaveLength(0);

    // Forgot-password answers as ever, and the issued token still works (read from the outbox row).
    const forgot = await service.fetch("/v1/auth/forgot-password", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: user.email }),
    });
    expect(forgot.status).toBe(200);
    const token = /token=(vt_[A-Za-z0-9_-]+)/.exec(after!.text!)?.[1];
    const verified = await service.fetch("/v1/auth/verify-email", {
      method: "POST",
      headers: { "content-type": "application/json", ...user.auth },
      body: JSON.stringify({ token }),
    });
    expect(verified.status).toBe(200);
  });
});
