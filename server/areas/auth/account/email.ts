import type { TaskList } from "graphile-worker";
import { invalidRequest } from "../../../toolkit/http/error-catalogue.ts";
import type { Mail } from "../../../toolkit/providers/email/types.ts";
import type { Services } from "../../../toolkit/services.ts";
import { hashPassword } from "../passwords.ts";
import { revokeUserApiKeys } from "../api-keys/service.ts";
import { revokedCredentials } from "../credential-cache.ts";
import { revokeUserSessions } from "../sessions/service.ts";
import { markEmailVerified, replacePasswordHash } from "../users/service.ts";
import { passwordResetMail, verificationMail } from "./email-templates.ts";
import { consumeEmailToken, emailTokenStateOf, issueEmailToken, issueEmailTokenByEmail, spendEmailTokens, type EmailTokenPurpose, type EmailTokenState } from "./email-tokens.ts";

// E-mail verification and password reset.

export const EMAIL_SEND_TASK = "email_send";
// graphile-worker's backoff (exp(attempt) seconds) makes 8 attempts span about 50 minutes.
const EMAIL_SEND_ATTEMPTS = 8;

/**
 * Delivers after the caller has answered: SMTP latency must neither slow a request nor tell an
 * observer (forgot-password) that the address exists, and a mail server that is down must not fail
 * registration. The mail is kept in the outbox (its text sealed), then a job sends it, retrying a
 * failed send with backoff; until it is sent it stays there without `sent_at`, where the admin CLI
 * shows it. The job carries the outbox id only (issue 31 M3): a job's payload is stored in the
 * clear by graphile-worker and was printed by its log, and this mail holds a token.
 */
function deliverLater(services: Services, mail: Mail): void {
  setImmediate(() => {
    queueMail(services, mail).catch((error: unknown) => services.log.error({ err: error, kind: mail.kind }, "e-mail could not be kept in the outbox"));
  });
}

async function queueMail(services: Services, mail: Mail): Promise<void> {
  const { email } = services.providers;
  const id = await email.keep(mail);
  try {
    await services.jobs.add(EMAIL_SEND_TASK, { id }, { maxAttempts: EMAIL_SEND_ATTEMPTS });
  } catch (error) {
    services.log.error({ err: error, kind: mail.kind, id }, "e-mail could not be queued; it is sent now, once");
    await email.deliver(id).catch((failure: unknown) => services.log.error({ err: failure, kind: mail.kind, id }, "e-mail could not be sent"));
  }
}

/**
 * The job that sends a kept mail: a failure is thrown, so graphile-worker retries it. A job queued
 * before issue 31 carries the mail itself; it is kept and sent the same way.
 */
export function emailTasks(services: Services): TaskList {
  return {
    [EMAIL_SEND_TASK]: async (payload, helpers) => {
      const { email } = services.providers;
      const job = payload as { id: string } & Partial<Mail>;
      try {
        await (job.text === undefined ? email.deliver(job.id) : email.send(job as Mail));
      } catch (error) {
        const last = helpers.job.attempts >= helpers.job.max_attempts;
        services.log.warn({ err: error, id: job.id, attempt: helpers.job.attempts, last }, last ? "e-mail could not be sent; giving up" : "e-mail could not be sent; will retry");
        throw error;
      }
    },
  };
}

/** Issues a verification token and mails it; registration calls this, and must not fail because of it. */
export async function sendVerificationEmail(services: Services, user: { id: string; email: string }): Promise<void> {
  const token = await issueEmailToken(services.db.knex, user.id, "verify_email", services.now());
  deliverLater(services, verificationMail(services.config, user.email, token));
}

/**
 * Verifies an address. With `userId` (the API's caller) the token must be theirs: someone else's is
 * refused and stays usable by its owner. Without (the e-mailed link's page, which has no session)
 * the token, mailed to that address only, names its owner
 * (docs/adr/0313-built-in-pages-csp-and-csrf-for-the-e-mail-pages.md).
 */
export async function verifyEmail(services: Services, userId: string | undefined, token: string): Promise<void> {
  const now = services.now();
  const verified = await services.db.knex.transaction(async (trx) => {
    const owner = await consumeEmailToken(trx, token, "verify_email", now, userId);
    return owner ? markEmailVerified(trx, owner, now) : false;
  });
  if (!verified) throw invalidRequest("The verification token is invalid, expired, already used or not yours");
}

/**
 * What a mailed token is now, without using it: a page shows the form of a usable one, and says
 * which of the others it is (a mail scanner's GET must not spend it).
 */
export function emailTokenState(services: Services, token: string, purpose: EmailTokenPurpose): Promise<EmailTokenState> {
  return emailTokenStateOf(services.db.knex, token, purpose, services.now());
}

/** Mails a reset link if the address is registered; the same statement runs for a known and an unknown address. */
export async function forgotPassword(services: Services, email: string): Promise<void> {
  const issued = await issueEmailTokenByEmail(services.db.knex, email, "reset_password", services.now());
  if (issued) deliverLater(services, passwordResetMail(services.config, issued.email, issued.token));
}

/** What a password reset revoked, as the answer counts it. */
export interface ResetRevoked {
  sessions: number;
  oauth_grants: number;
  api_keys: number;
}

/**
 * Sets the new password, spends every reset token of the user, and ends every credential of the
 * user: logins, OAuth grants, and API keys of every scope (issue 31 L2: a reset means the account
 * may be compromised, and a key minted by whoever got in would otherwise outlive it).
 */
export async function resetPassword(services: Services, token: string, newPassword: string): Promise<ResetRevoked> {
  const passwordHash = await hashPassword(newPassword);
  const now = services.now();
  const changed = await services.db.knex.transaction(async (trx) => {
    const userId = await consumeEmailToken(trx, token, "reset_password", now);
    if (!userId) return undefined;
    if (!(await replacePasswordHash(trx, userId, passwordHash, now))) return undefined;
    await spendEmailTokens(trx, userId, "reset_password", now);
    // Refresh tokens die with their session; access tokens are checked against it.
    const { logins, grants } = await revokeUserSessions(trx, userId, now);
    const apiKeys = await revokeUserApiKeys(trx, userId, now);
    return { userId, revoked: { sessions: logins, oauth_grants: grants, api_keys: apiKeys } };
  });
  if (!changed) throw invalidRequest("The reset token is invalid, expired or already used");
  // Drops every cached credential of the user, API keys included, in every process.
  await revokedCredentials(services, { userId: changed.userId });
  return changed.revoked;
}
