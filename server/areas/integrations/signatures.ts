import { createHmac, timingSafeEqual } from "node:crypto";

/** How far a workspace callback's timestamp may be from now: the platform's replay window. */
export const SIGNATURE_WINDOW_SECONDS = 300;

const sameText = (a: string, b: string) => {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
};

/** The messenger webhook's secret token, compared in constant time. */
export function messengerSecretMatches(sent: string | undefined, expected: string): boolean {
  return sent !== undefined && sameText(sent, expected);
}

/**
 * The workspace platform's v0 signature: `v0=` + hex HMAC-SHA256 of `v0:{timestamp}:{raw body}`
 * under the app's signing secret, with the timestamp within 5 minutes of `now`.
 */
export function slackSignatureValid(
  signed: { signature: string | undefined; timestamp: string | undefined; rawBody: Buffer | undefined },
  signingSecret: string,
  now: Date,
): boolean {
  const { signature, timestamp, rawBody } = signed;
  if (!signature || !timestamp || !rawBody || !/^\d{1,12}$/.test(timestamp)) return false;
  if (Math.abs(now.getTime() / 1000 - Number(timestamp)) > SIGNATURE_WINDOW_SECONDS) return false;
  return sameText(signature, slackSignature(signingSecret, timestamp, rawBody));
}

export function slackSignature(signingSecret: string, timestamp: string, rawBody: Buffer | string): string {
  const hmac = createHmac("sha256", signingSecret);
  hmac.update(`v0:${timestamp}:`);
  hmac.update(rawBody);
  return `v0=${hmac.digest("hex")}`;
}
