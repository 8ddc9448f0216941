import { createHash } from "node:crypto";
import type { Request } from "express";

/**
 * Who is calling, as a stable string for per-client state (rate-limit counters, idempotency keys).
 * Once the auth area resolves a principal it is the user; before that, a digest of the credential
 * the request carries, or the client IP for credential-free calls.
 */
export function clientIdentity(req: Request): string {
  const principal = (req as Request & { principal?: { userId: string } }).principal;
  if (principal) return `user:${principal.userId}`;
  const { headers } = req;
  const credential = (headers["x-api-key"] ?? headers.authorization) as string | undefined;
  if (credential) return `cred:${createHash("sha256").update(credential).digest("base64url").slice(0, 32)}`;
  return `ip:${req.ip ?? "unknown"}`;
}
