// The SDK's account helpers against the real service: e-mail verification, password reset and
// account deletion, with the e-mailed tokens read back from the outbox (no SMTP_URL here).
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { AuthenticationError, BadRequestError, ConflictError, createClient, PermissionDeniedError } from "../../sdk/src/index.ts";
import { outboxMails } from "../support/outbox.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { until } from "../support/wait.ts";

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service?.close();
});

/** The token of the newest mail of `kind` to `to`, polled until it has reached the outbox (mails leave after the answer). */
async function mailedToken(to: string, kind: string, count = 1): Promise<string> {
  return until(`${kind} mail #${count} to ${to}`, async () => {
    const mails = await outboxMails(service, { to, kind });
    const match = mails.length >= count ? /\?token=(\S+)/.exec(mails[count - 1]!.text ?? "") : null;
    return match ? decodeURIComponent(match[1]!) : undefined;
  }, 30_000);
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
    // A wrong password deletes nothing; a login of a moment ago needs none (issue 34).
    await expect(renewed.auth.deleteMe({ password: "Not-the-password-1" })).rejects.toBeInstanceOf(PermissionDeniedError);
    const deletion = await renewed.auth.deleteMe();
    expect(Date.parse(deletion.grace_period_ends)).toBeGreaterThan(Date.parse(deletion.deleted_at));
    await expect(renewed.auth.me()).rejects.toBeInstanceOf(AuthenticationError);

    // During the grace period a login says so, and restoreMe brings the account back, signed in.
    const pending = await anonymous.auth.login({ email, password: "Cassiopeia7night" }).catch((error: unknown) => error);
    expect(pending).toBeInstanceOf(PermissionDeniedError);
    expect(pending).toMatchObject({ status: 403, code: "account_pending_deletion", details: { grace_period_ends: deletion.grace_period_ends, restorable: true } });
    await expect(anonymous.auth.restoreMe({ email, password: "Not-the-password-1" })).rejects.toBeInstanceOf(AuthenticationError);
    const restored = await anonymous.auth.restoreMe({ email, password: "Cassiopeia7night" });
    expect(restored).toMatchObject({ message: "Account restored.", user: { email }, restored: { api_keys: 0 } });
    const back = createClient({ baseUrl: service.url, accessToken: restored.access_token, refreshToken: restored.refresh_token });
    expect(await back.auth.me()).toMatchObject({ email, email_verified: true });
    await expect(anonymous.auth.restoreMe({ email, password: "Cassiopeia7night" })).rejects.toBeInstanceOf(ConflictError);
    // The password confirms a deletion whatever the session's age.
    expect((await back.auth.deleteMe({ password: "Cassiopeia7night" })).grace_period_ends).toEqual(expect.any(String));
  });
});
