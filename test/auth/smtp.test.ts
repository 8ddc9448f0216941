import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EMAIL_SEND_TASK } from "../../server/areas/auth/account/email.ts";
import { outboxMails } from "../support/outbox.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { startSmtpCatcher, type SmtpCatcher } from "../support/smtp-catcher.ts";
import { registerUser } from "../support/users.ts";
import { until } from "../support/wait.ts";

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

    const message = await until("the verification mail at the SMTP server", () => smtp.received.find((mail) => mail.to.includes(user.email)), 10_000);
    expect(message.raw).toMatch(/^Subject: Confirm your e-mail address/m);
    const text = bodyOf(message.raw);
    const token = /https:\/\/persona\.test\/verify-email\?token=(vt_[A-Za-z0-9_-]+)/.exec(text)?.[1];
    expect(token, text).toBeDefined();

    // Once the server took it, the outbox keeps the mail's record but not its text (issue 31 M3).
    const row = await until("the outbox row marked sent", async () => {
      const found = await service.services.db.knex("email_outbox").where({ to: user.email, kind: "verify_email" }).first();
      return found?.sent_at ? found : undefined;
    }, 10_000);
    expect(row).toMatchObject({ text: null, text_sealed: null, subject: "Confirm your e-mail address for Persona" });

    // The mailed token is the real one.
    const verified = await service.clientFor(user).POST("/v1/auth/verify-email", { body: { token: token! } });
    expect(verified.response.status).toBe(200);
  });

  it("a mail the server refused is sent again by its job once the server takes it, once (issue 13, item 18)", async () => {
    refuseRecipients = true;
    const before = refused;
    const user = await registerUser(service);
    await until("the SMTP server's refusal", () => refused > before, 10_000);
    refuseRecipients = false;
    // graphile-worker retries after about e^1 s.
    await until("the mail sent again", () => smtp.received.some((mail) => mail.to.includes(user.email)), 20_000);
    expect(smtp.received.filter((mail) => mail.to.includes(user.email))).toHaveLength(1);
    const rows = await until("the outbox row marked sent", async () => {
      const found = await service.services.db.knex("email_outbox").where({ to: user.email, kind: "verify_email" });
      return found.length && found.every((row) => row.sent_at) ? found : undefined;
    }, 10_000);
    expect(rows).toHaveLength(1);
  });

  it("a server that refuses the recipient fails no registration; the mail stays unsent in the outbox", async () => {
    refuseRecipients = true;
    const before = refused;
    const user = await registerUser(service);
    const me = await service.fetch("/v1/auth/me", { headers: user.auth });
    expect(me.status).toBe(200);

    await until("the SMTP server's refusal", () => refused > before, 10_000);
    const kept = await until(
      "the verification mail in the outbox",
      () => service.services.db.knex("email_outbox").where({ to: user.email, kind: "verify_email" }).first(),
      10_000,
    );
    // The failed send is over, and would have (wrongly) marked the row, once its job recorded the
    // error (graphile-worker's jobs view has no payload: its own table names the mail).
    await until(
      "the failed send's error on its job",
      () =>
        service.services.db.knex("graphile_worker._private_jobs as j")
          .join("graphile_worker._private_tasks as t", "t.id", "j.task_id")
          .where("t.identifier", EMAIL_SEND_TASK)
          .whereRaw("j.payload->>'id' = ?", [kept.id])
          .whereNotNull("j.last_error")
          .first("j.id"),
      10_000,
    );
    const [after] = await outboxMails(service, { to: user.email, kind: "verify_email" });
    expect(after!.sent_at).toBeNull();
    expect(smtp.received.filter((mail) => mail.to.includes(user.email))).toHaveLength(0);

    // Forgot-password answers as ever, and the issued token still works (read from the outbox row).
    const forgot = await service.api.POST("/v1/auth/forgot-password", { body: { email: user.email } });
    expect(forgot.response.status).toBe(200);
    const token = /token=(vt_[A-Za-z0-9_-]+)/.exec(after!.text!)?.[1];
    const verified = await service.clientFor(user).POST("/v1/auth/verify-email", { body: { token: token! } });
    expect(verified.response.status).toBe(200);
  });
});
