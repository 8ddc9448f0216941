import type { Request } from "express";

// Signed callbacks (the workspace platform's Events API) are verified over the exact bytes sent;
// re-serialising the parsed JSON would not give them back. The JSON parser hands each body here.

const bodies = new WeakMap<object, Buffer>();

export function keepRawBody(req: object, body: Buffer): void {
  bodies.set(req, body);
}

/** The request's body as received, when the JSON parser read one. */
export function rawBodyOf(req: Request): Buffer | undefined {
  return bodies.get(req);
}
