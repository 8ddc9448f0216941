// The SDK's account helpers against the real service: e-mail verification, password reset and
// account deletion, with the e-mailed tokens read back from the outbox (no SMTP_URL here).
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { AuthenticationError, BadRequestError, createClient } from "../../sdk/src/index.ts";
import { outboxMails } from "../support/outbox.ts";
import { startTestService, type TestService } from "../support/service.ts";

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service?.close();
});

/** The token of the newest mail of `kind` to `to`, polled until it has reached the outbox (mails leave after the answer). */
async function mailedToken(to: string, kind: string, count = 1): Promise<string> {
  for (let attempt = 0; attempt < 500; attempt++) {
    const mails = await outboxMails(service, { to, kind });
    if (mails.length >= count) {
      const match = /\?token=(\S+)/.exec(mails[count - 1]!.text ?? "");
      if (match) return decodeURIComponent(match[1]!);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no ${kind} mail #${count} to ${to}`);
}

describe("client.auth account helpers", () => {
  test("verifies the e-mail address, resets a forgotten password and deletes the account", { timeout: 120_000 }, async () => {
    const anonymous = createClient({ baseUrl: service.url });
    const email = `sdk_account_${Date.now()}@example.com`;
    const session = await anonymous.auth.register({ email, username: `sdk_account_${Date.now() % 1_000_000}`, password: "Correct-horse-9" });
    const client = createClient({ baseUrl: service.url, accessToken: session.access_token, refreshToken: session.refresh_token });

    await expect(client.auth.verifyEmail({ token: "vt_not-a-real-token" })).rejects.toBeInstanceOf(BadRequestError);
    expect(await client.auth.verifyEmail({ token: await mailedToken(email, "verify_email") })).toMatchObject({ email_verified: true });
    expect(await client.auth.me()).toMatchObject({ email, email_verified: true });

    expect(await anonymous.auth.forgotPassword({ email: "nobody@example.com" })).toHaveProperty("message");
    const forgot = await anonymous.auth.forgotPassword({ email });
    expect(forgot.message).toEqual(expect.any(String));
    const token = await mailedToken(email, "reset_password");
    const reset = await anonymous.auth.resetPassword({ token, new_password: "Cassiopeia7night" });
    expect(reset.revoked.sessions).toBeGreaterThanOrEqual(1);
    await expect(anonymous.auth.resetPassword({ token, new_password: "Cassiopeia8night" })).rejects.toBeInstanceOf(BadRequestError);
    // The reset ended the old session, its refresh token included.
    await expect(client.auth.me()).rejects.toBeInstanceOf(AuthenticationError);

    const again = await anonymous.auth.login({ email, password: "Cassiopeia7night" });
    const renewed = createClient({ baseUrl: service.url, accessToken: again.access_token, refreshToken: again.refresh_token });
    const deletion = await renewed.auth.deleteMe();
    expect(Date.parse(deletion.grace_period_ends)).toBeGreaterThan(Date.parse(deletion.deleted_at));
    await expect(renewed.auth.me()).rejects.toBeInstanceOf(AuthenticationError);
  });
});
