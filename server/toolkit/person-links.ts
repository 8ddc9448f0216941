import { publicBaseUrl, type Config } from "./config.ts";

/**
 * The links the service sends to people (in e-mails, share redirects, the listing URL that
 * publishing answers): one home for them, so that a front end of the operator's own
 * (`APP_BASE_URL`) implements exactly these paths and query parameters, and without one they lead
 * to the service's own pages (server/areas/pages/, which route by the same `PERSON_PATHS`).
 * Links to the API itself (images, export downloads, callbacks) are not person-facing: they keep
 * `PUBLIC_BASE_URL` (server/toolkit/links.ts). docs/adr/0312-app-base-url-and-person-facing-links.md.
 */

/** What a person-facing link is made absolute with. */
export type PersonLinkSettings = Pick<Config, "appBaseUrl" | "publicBaseUrl" | "host" | "port">;

/** The documented paths (README, docs/design/pages.md); a front end at `APP_BASE_URL` serves these. */
export const PERSON_PATHS = {
  /** `?token=<vt_…>`: confirms the e-mail address of the account the token was mailed for. */
  verifyEmail: "/verify-email",
  /** `?token=<rp_…>`: sets a new password. */
  resetPassword: "/reset-password",
  /** `/p/<persona id>`: a public persona; where share links redirect. */
  persona: "/p",
  /** `/marketplace/<listing id>`: a marketplace listing; what publishing answers. */
  listing: "/marketplace",
} as const;

/** Where person-facing links lead: `APP_BASE_URL`, else the service's own address. No trailing slash. */
export function personBaseUrl(settings: PersonLinkSettings): string {
  return settings.appBaseUrl ?? publicBaseUrl(settings);
}

const withToken = (settings: PersonLinkSettings, path: string, token: string) => `${personBaseUrl(settings)}${path}?token=${encodeURIComponent(token)}`;

/** The link of a verification e-mail. */
export function verifyEmailLink(settings: PersonLinkSettings, token: string): string {
  return withToken(settings, PERSON_PATHS.verifyEmail, token);
}

/** The link of a password-reset e-mail. */
export function resetPasswordLink(settings: PersonLinkSettings, token: string): string {
  return withToken(settings, PERSON_PATHS.resetPassword, token);
}

/** A persona's public page, where its share links redirect. */
export function personaPageLink(settings: PersonLinkSettings, personaId: string): string {
  return `${personBaseUrl(settings)}${PERSON_PATHS.persona}/${encodeURIComponent(personaId)}`;
}

/** A marketplace listing's page. */
export function listingPageLink(settings: PersonLinkSettings, listingId: string): string {
  return `${personBaseUrl(settings)}${PERSON_PATHS.listing}/${encodeURIComponent(listingId)}`;
}
