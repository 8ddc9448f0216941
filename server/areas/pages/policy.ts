import type { Response } from "express";
import { STYLESHEET_SOURCE } from "./stylesheet.ts";

/**
 * The headers of every built-in page: a Content-Security-Policy that starts from `default-src
 * 'none'` and allows only what the page needs from the service itself (its stylesheet by hash,
 * images from 'self', forms posting to 'self'), never `'unsafe-inline'`; framing refused unless
 * the page names who may frame it; no referrer (the e-mail pages' URLs hold a token); no MIME
 * sniffing. docs/adr/0313-built-in-pages-csp-and-csrf-for-the-e-mail-pages.md.
 */
export interface PagePolicy {
  /** How long a cache may keep the page: never (token pages, form answers), or this many seconds (public pages). */
  cache: "no-store" | { publicSeconds: number };
  /** Origins that may frame the page; none by default (`frame-ancestors 'none'`, X-Frame-Options DENY). */
  frameAncestors?: readonly string[];
  /** Script sources (`'self'`, `'sha256-…'`); none by default. */
  scripts?: readonly string[];
  /** Where the page's scripts may connect (`'self'`); nowhere by default. */
  connect?: readonly string[];
  /** Audio and video sources (`'self'`, `blob:`); none by default. */
  media?: readonly string[];
  /** Style sources besides the stylesheet of the pages. */
  styles?: readonly string[];
}

/** The policy's text. */
export function contentSecurityPolicy(policy: Omit<PagePolicy, "cache">): string {
  const directives: [string, readonly string[]][] = [
    ["default-src", ["'none'"]],
    ["style-src", [STYLESHEET_SOURCE, ...(policy.styles ?? [])]],
    ["img-src", ["'self'"]],
    ["form-action", ["'self'"]],
    ["frame-ancestors", policy.frameAncestors?.length ? policy.frameAncestors : ["'none'"]],
    ["base-uri", ["'none'"]],
  ];
  if (policy.scripts?.length) directives.push(["script-src", policy.scripts]);
  if (policy.connect?.length) directives.push(["connect-src", policy.connect]);
  if (policy.media?.length) directives.push(["media-src", policy.media]);
  return directives.map(([name, sources]) => `${name} ${sources.join(" ")}`).join("; ");
}

/** Every header a page goes out with. */
export function pageHeaders(policy: PagePolicy): Record<string, string> {
  const headers: Record<string, string> = {
    "Content-Security-Policy": contentSecurityPolicy(policy),
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": policy.cache === "no-store" ? "no-store" : `public, max-age=${policy.cache.publicSeconds}`,
  };
  // For browsers without frame-ancestors; an allow-list cannot be said in X-Frame-Options.
  if (!policy.frameAncestors?.length) headers["X-Frame-Options"] = "DENY";
  return headers;
}

/** Sends a rendered page (document.ts) with its status and headers. */
export function sendPage(res: Response, status: number, document: string, policy: PagePolicy): void {
  res.status(status).set(pageHeaders(policy)).type("text/html; charset=utf-8").send(document);
}
