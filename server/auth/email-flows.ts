import { principalOf } from "../http/authenticate.ts";
import { ApiError } from "../http/errors.ts";
import type { Handler } from "../http/router.ts";
import type { Mail } from "../providers/email/types.ts";
import type { Services } from "../services.ts";
import { consumeEmailToken, issueEmailToken, issueEmailTokenByEmail, spendEmailTokens } from "./email-tokens.ts";
import { passwordResetMail, verificationMail } from "./email-templates.ts";
import { hashPassword } from "./passwords.ts";
import { revokeUserSessions, updateUser } from "./store.ts";

const FORGOT_MESSAGE = "If the address is registered, a reset link is on its way.";

/**
 * Delivers after the caller has answered: SMTP latency must neither slow a request nor tell an
 * observer (forgot-password) that the address exists, and a mail server that is down must not fail
 * registration. A failed mail is logged and stays in the outbox without `sent_at`.
 */
function deliverLater(services: Services, mail: Mail): void {
  setImmediate(() => {
    services.providers.email.send(mail).catch((error: unknown) => {
      services.log.error({ err: error, kind: mail.kind }, "e-mail could not be sent; it stays unsent in the outbox");
    });
  });
}

/** Issues a verification token and mails it; registration calls this, and must not fail because of it. */
export async function sendVerificationEmail(services: Services, user: { id: string; email: string }): Promise<void> {
  const token = await issueEmailToken(services.db.knex, user.id, "verify_email", services.now());
  deliverLater(services, verificationMail(services.config, user.email, token));
}

export const auth_verify_email: Handler<"auth_verify_email"> = async ({ services, req, body }) => {
  const { userId } = principalOf(req);
  const now = services.now();
  // Bound to the caller: someone else's token is refused and stays usable by its owner.
  const verified = await services.db.knex.transaction(async (trx) => {
    if (!(await consumeEmailToken(trx, body.token, "verify_email", now, userId))) return false;
    return Boolean(await updateUser(trx, userId, { email_verified: true, updated_at: now }));
  });
  if (!verified) throw new ApiError(400, "invalid_request", "The verification token is invalid, expired, already used or not yours");
  return { status: 200, body: { message: "E-mail address verified.", email_verified: true } };
};

export const auth_forgot_password: Handler<"auth_forgot_password"> = async ({ services, body }) => {
  // The same statement runs for a known and an unknown address, and the mail leaves after the answer.
  const issued = await issueEmailTokenByEmail(services.db.knex, body.email, "reset_password", services.now());
  if (issued) deliverLater(services, passwordResetMail(services.config, issued.email, issued.token));
  return { status: 200, body: { message: FORGOT_MESSAGE } };
};

export const auth_reset_password: Handler<"auth_reset_password"> = async ({ services, body }) => {
  const passwordHash = await hashPassword(body.new_password);
  const now = services.now();
  const changed = await services.db.knex.transaction(async (trx) => {
    const userId = await consumeEmailToken(trx, body.token, "reset_password", now);
    if (!userId) return false;
    if (!(await updateUser(trx, userId, { password_hash: passwordHash, updated_at: now }))) return false;
    await spendEmailTokens(trx, userId, "reset_password", now);
    // Every login of the user ends: refresh tokens die with their session, access tokens are checked against it.
    await revokeUserSessions(trx, userId, now);
    return true;
  });
  if (!changed) throw new ApiError(400, "invalid_request", "The reset token is invalid, expired or already used");
  return { status: 200, body: { message: "Password changed. Please log in again." } };
};
