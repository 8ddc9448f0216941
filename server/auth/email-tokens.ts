import type { Knex } from "knex";
import { randomToken, sha256 } from "./tokens.ts";

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
  await knex("email_tokens").insert({ token_hash, user_id: userId, purpose, created_at: now, expires_at });
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
  const result = await knex.raw<{ rows: { user_id: string; email: string }[] }>(
    `INSERT INTO email_tokens (token_hash, user_id, purpose, created_at, expires_at)
     SELECT ?, u.id, ?, ?, ? FROM users u WHERE lower(u.email) = lower(?) AND u.deleted_at IS NULL
     RETURNING user_id, (SELECT email FROM users WHERE id = user_id) AS email`,
    [token_hash, purpose, now, expires_at, email],
  );
  const row = result.rows[0];
  return row ? { token, userId: row.user_id, email: row.email } : undefined;
}

/**
 * Marks the token used and returns its owner, or undefined when it is unknown, of another purpose,
 * used, expired, or (with `userId`) someone else's. One UPDATE: of two concurrent uses exactly one wins.
 */
export async function consumeEmailToken(
  knex: Knex,
  token: string,
  purpose: EmailTokenPurpose,
  now: Date,
  userId?: string,
): Promise<string | undefined> {
  const query = knex("email_tokens")
    .where({ token_hash: sha256(token), purpose })
    .whereNull("used_at")
    .where("expires_at", ">", now);
  if (userId) query.where({ user_id: userId });
  const [row] = (await query.update({ used_at: now }).returning("user_id")) as { user_id: string }[];
  return row?.user_id;
}

/** Spends every other outstanding token of the purpose (after a reset, older reset links are dead). */
export async function spendEmailTokens(knex: Knex, userId: string, purpose: EmailTokenPurpose, now: Date): Promise<void> {
  await knex("email_tokens").where({ user_id: userId, purpose }).whereNull("used_at").update({ used_at: now });
}
