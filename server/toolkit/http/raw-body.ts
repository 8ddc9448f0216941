import type { Request } from "express";

// Signed callbacks (the payment provider's webhooks, the workspace platform's Events API) are
// verified over the exact bytes sent; re-serialising the parsed JSON would not give them back.
// The body parsers' `verify` (http/well-formed.ts) hands each body here.

// A property of the request rather than a WeakMap entry: weak entries cost the garbage collector
// on every request with a body.
const RAW = Symbol("raw body");
type Holding = { [RAW]?: Buffer };

export function keepRawBody(req: object, body: Buffer): void {
  (req as Holding)[RAW] = body;
}

/** The request's body as received, when the JSON or form parser read one. */
export function rawBodyOf(req: Request): Buffer | undefined {
  return (req as Holding)[RAW];
}
