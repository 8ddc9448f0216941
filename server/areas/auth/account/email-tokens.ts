import type { Knex } from "knex";
import { randomToken, sha256 } from "../../../toolkit/tokens.ts";
import { consumeEmailTokenRow, findEmailTokenRow, insertEmailToken, insertEmailTokenByEmail, spendEmailTokenRows } from "./store.ts";

export type EmailTokenPurpose = "verify_email" | "reset_password";

export const EMAIL_TOKEN_TTL_MS: Record<EmailTokenPurpose, number> = {
  verify_email: 24 * 60 * 60 * 1000,
  reset_password: 60 * 60 * 1000,
};

// The prefix tells a support engineer (or a user pasting into the wrong form) what a token is for.
const PREFIX: Record<EmailTokenPurpose, string> = { verify_email: "vt_", reset_password: "rp_" };

/** A fresh token and the row fields that store it; only the SHA-256 is ever written. */
function newToken(purpose: EmailTokenPurpose, now: Date): { token: string; token_hash: string; expires_at: Date } {
  const token = `${PREFIX[purpose]}${randomToken()}`;
  return { token, token_hash: sha256(token), expires_at: new Date(now.getTime() + EMAIL_TOKEN_TTL_MS[purpose]) };
}

/** Issues a single-use token for a known user. */
export async function issueEmailToken(knex: Knex, userId: string, purpose: EmailTokenPurpose, now: Date): Promise<string> {
  const { token, token_hash, expires_at } = newToken(purpose, now);
  await insertEmailToken(knex, { token_hash, user_id: userId, purpose, created_at: now, expires_at });
  return token;
}

/**
 * Issues a token for whoever has this e-mail, in one statement that runs whether or not anyone
 * does: the caller (forgot-password) must cost the same for a registered and an unknown address.
 */
export async function issueEmailTokenByEmail(
  knex: Knex,
  email: string,
  purpose: EmailTokenPurpose,
  now: Date,
): Promise<{ token: string; userId: string; email: string } | undefined> {
  const { token, token_hash, expires_at } = newToken(purpose, now);
  const row = await insertEmailTokenByEmail(knex, email, { token_hash, purpose, created_at: now, expires_at });
  return row ? { token, userId: row.user_id, email: row.email } : undefined;
}

/** The owner of a token it marked used; undefined when unknown, used, expired, or (with `userId`) not theirs. */
export function consumeEmailToken(knex: Knex, token: string, purpose: EmailTokenPurpose, now: Date, userId?: string): Promise<string | undefined> {
  return consumeEmailTokenRow(knex, sha256(token), purpose, now, userId);
}

/** Spends every other outstanding token of the purpose (after a reset, older reset links are dead). */
export function spendEmailTokens(knex: Knex, userId: string, purpose: EmailTokenPurpose, now: Date): Promise<void> {
  return spendEmailTokenRows(knex, userId, purpose, now);
}

/** A token as a page sees it: usable, already used, past its expiry, or none the service issued for the purpose. */
export type EmailTokenState = "usable" | "used" | "expired" | "unknown";

/** What the token is now; nothing is changed. */
export async function emailTokenStateOf(knex: Knex, token: string, purpose: EmailTokenPurpose, now: Date): Promise<EmailTokenState> {
  const row = await findEmailTokenRow(knex, sha256(token), purpose);
  if (!row) return "unknown";
  if (row.used_at) return "used";
  return row.expires_at.getTime() > now.getTime() ? "usable" : "expired";
}
