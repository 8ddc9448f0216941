import { publicBaseUrl, type Config } from "./config.ts";

/** What a link is made absolute with: the settings that give the public base URL (`services.config`). */
export type Where = Pick<Config, "publicBaseUrl" | "host" | "port">;

/**
 * Links into this service that it stores (an image's own link, a persona's avatar: the files of
 * generated images, automatic avatars and card avatars) are kept as their path,
 * `/v1/images/files/<name>.png`, and made absolute when read, from `PUBLIC_BASE_URL` (else the
 * address the process listens on). A database restored onto another host or port, or a service
 * whose address changes, shows links that reach it, not the address of the day they were made
 * (issue 34, item 10; migration 0031 made the links stored before relative). Links elsewhere (an
 * avatar on a CDN) are stored and shown as given, and so are users' avatars, links their owners give.
 */

/** The stored form of a link: a link into this service (under its base URL) becomes its path; any other link is kept. */
export function storedLink(where: Where, url: string): string {
  const base = publicBaseUrl(where);
  return url.startsWith(`${base}/`) ? url.slice(base.length) : url;
}

/** A stored link as the API shows it: a path of this service made absolute; any other link as it is. */
export function shownLink(where: Where, stored: string): string;
export function shownLink(where: Where, stored: string | null): string | null;
export function shownLink(where: Where, stored: string | null): string | null {
  return stored?.startsWith("/") ? `${publicBaseUrl(where)}${stored}` : stored;
}
