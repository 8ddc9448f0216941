import type { RequestHandler } from "express";

/**
 * Every answer says `X-Content-Type-Options: nosniff`: a browser must take a JSON body, an error or
 * a served file (avatars, card PNGs, speech) for what its Content-Type says, never sniff it into a
 * page that runs script (OWASP API8).
 */
export const noSniff: RequestHandler = (_req, res, next) => {
  res.setHeader("X-Content-Type-Options", "nosniff");
  next();
};
