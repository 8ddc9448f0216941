import type { Config } from "../../../toolkit/config.ts";
import { resetPasswordLink, verifyEmailLink } from "../../../toolkit/person-links.ts";
import type { Mail } from "../../../toolkit/providers/email/types.ts";

// The links lead to APP_BASE_URL's front end, else to the service's own pages (toolkit/person-links.ts).

export function verificationMail(config: Config, to: string, token: string): Mail {
  return {
    to,
    kind: "verify_email",
    subject: "Confirm your e-mail address for Persona",
    text: [
      "Welcome to Persona!",
      "",
      "Confirm your e-mail address by opening this link:",
      verifyEmailLink(config, token),
      "",
      "Or send this token to POST /v1/auth/verify-email:",
      token,
      "",
      "The link works once and expires in 24 hours. If you did not create an account, ignore this mail.",
    ].join("\n"),
  };
}

export function passwordResetMail(config: Config, to: string, token: string): Mail {
  return {
    to,
    kind: "reset_password",
    subject: "Reset your Persona password",
    text: [
      "Someone (hopefully you) asked to reset the password of your Persona account.",
      "",
      "Choose a new password here:",
      resetPasswordLink(config, token),
      "",
      "Or send this token with your new password to POST /v1/auth/reset-password:",
      token,
      "",
      "The link works once and expires in 1 hour. Resetting signs you out everywhere, ends the access",
      "of every app you authorized (OAuth), and revokes every API key of your account: create new",
      "keys afterwards for the scripts and integrations that need them.",
      "If you did not ask for this, ignore this mail: your password stays as it is.",
    ].join("\n"),
  };
}
