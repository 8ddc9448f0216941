import { createHmac } from "node:crypto";
import type { Knex } from "knex";
import { instanceSecret } from "../../toolkit/db/instance-secrets.ts";
import { constantTimeEqual } from "../../toolkit/tokens.ts";
import type { Services } from "../../toolkit/services.ts";

/**
 * The anti-forgery token of the e-mail pages' forms. The forms need no session, so the token is
 * bound to the page the server rendered instead: an HMAC, with a secret of the installation, of the
 * form's name, the e-mailed token the page is about and the time it was issued. A page on another
 * site can neither read it (same-origin policy) nor compute it, so a forged cross-site POST is
 * refused; it expires after `FORM_TOKEN_TTL_MS`, and every process on the database accepts it.
 * docs/adr/0313-built-in-pages-csp-and-csrf-for-the-e-mail-pages.md.
 */

/** How long a rendered form can be submitted. */
export const FORM_TOKEN_TTL_MS = 60 * 60 * 1000;

/** The forms that carry one. */
export type FormName = "verify_email" | "reset_password";

// One secret per database, read once per process.
const secrets = new WeakMap<Knex, Promise<string>>();

function secretOf(services: Services): Promise<string> {
  const { knex } = services.db;
  let secret = secrets.get(knex);
  if (!secret) {
    secret = instanceSecret(knex, "pages_form_tokens", undefined);
    secret.catch(() => secrets.delete(knex));
    secrets.set(knex, secret);
  }
  return secret;
}

function mac(secret: string, form: FormName, subject: string, issuedAt: number): string {
  return createHmac("sha256", secret).update(JSON.stringify([form, subject, issuedAt])).digest("base64url");
}

/** A token for the form about `subject` (the e-mailed token), issued now. */
export async function formToken(services: Services, form: FormName, subject: string): Promise<string> {
  const issuedAt = services.now().getTime();
  return `${issuedAt}.${mac(await secretOf(services), form, subject, issuedAt)}`;
}

/** Whether `token` is one this installation issued for the form about `subject`, and still young enough. */
export async function formTokenValid(services: Services, form: FormName, subject: string, token: string): Promise<boolean> {
  const match = /^(\d{1,16})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!match) return false;
  const issuedAt = Number(match[1]);
  const age = services.now().getTime() - issuedAt;
  if (age < -60_000 || age > FORM_TOKEN_TTL_MS) return false;
  return constantTimeEqual(match[2]!, mac(await secretOf(services), form, subject, issuedAt));
}
