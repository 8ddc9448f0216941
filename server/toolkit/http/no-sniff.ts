import type { ServerResponse } from "node:http";

/**
 * Every answer says `X-Content-Type-Options: nosniff`: a browser must take a JSON body, an error or
 * a served file (avatars, card PNGs, speech) for what its Content-Type says, never sniff it into a
 * page that runs script (OWASP API8). Set by the app's first stage (app.ts) with the request id.
 */
export function noSniff(res: ServerResponse): void {
  res.setHeader("X-Content-Type-Options", "nosniff");
}
