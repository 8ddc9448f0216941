import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

/**
 * The embed's two scripts (browser/), read once when the service starts: the loader a site's
 * snippet names (`/embed.js`, small, no dependencies) and the chat page's script. Each carries a
 * version from its content: the chat page names its script with it, so a browser may keep the
 * script for good and still gets a changed one at once.
 */
export interface Asset {
  body: Buffer;
  /** The first 16 hex digits of the content's SHA-256. */
  version: string;
}

function asset(name: string): Asset {
  const body = readFileSync(new URL(`./browser/${name}`, import.meta.url));
  return { body, version: createHash("sha256").update(body).digest("hex").slice(0, 16) };
}

export const LOADER = asset("loader.js");
export const CHAT_SCRIPT = asset("chat.js");
