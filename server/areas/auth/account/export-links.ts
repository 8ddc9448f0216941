import { createHmac, timingSafeEqual } from "node:crypto";
import { publicBaseUrl } from "../../../toolkit/config.ts";
import type { Services } from "../../../toolkit/services.ts";
import { instanceSecret } from "../../../toolkit/db/instance-secrets.ts";

/** How long an e-mailed download link works. */
export const EXPORT_LINK_TTL_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * The signing key of download links. SECRETS_KEY, when configured, also encrypts secrets at rest,
 * so links are signed with a key derived from it for this one purpose rather than with it directly.
 */
export async function exportLinkKey(services: Services): Promise<Buffer> {
  const secret = await instanceSecret(services.db.knex, "export_links", services.config.secretsKey);
  return createHmac("sha256", secret).update("persona export download links v1").digest();
}

/** Lowercase hex HMAC-SHA256 over the export id and the expiry (epoch seconds). */
export function signExportLink(key: Buffer, exportId: string, expires: number): string {
  return createHmac("sha256", key).update(`${exportId}\n${expires}`).digest("hex");
}

/** Whether the link is signed by us and not yet expired. */
export function verifyExportLink(key: Buffer, exportId: string, expires: number, signature: string, now: Date): boolean {
  if (!Number.isSafeInteger(expires) || expires * 1000 <= now.getTime()) return false;
  const expected = Buffer.from(signExportLink(key, exportId, expires), "hex");
  const given = Buffer.from(signature, "hex");
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The absolute download link of an export, valid for EXPORT_LINK_TTL_MS from `now`. */
export function exportDownloadUrl(services: Services, key: Buffer, exportId: string, now: Date): { url: string; expiresAt: Date } {
  const expires = Math.floor((now.getTime() + EXPORT_LINK_TTL_MS) / 1000);
  const base = publicBaseUrl(services.config);
  const query = new URLSearchParams({ expires: String(expires), signature: signExportLink(key, exportId, expires) });
  return {
    url: `${base}/v1/auth/export-data/${encodeURIComponent(exportId)}/download?${query}`,
    expiresAt: new Date(expires * 1000),
  };
}
