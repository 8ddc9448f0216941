import { createHmac } from "node:crypto";

// Two signatures on every delivery (DECISIONS: Webhooks):
// - `X-Persona-Signature`: lowercase hex HMAC-SHA256 of the raw body, keyed with the secret's UTF-8 bytes;
// - Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>` over
//   `id.timestamp.body`), keyed with the base64 part of a `whsec_` secret (every generated secret),
//   else with the secret's own bytes (a receiver passes `{ format: "raw" }` to the standardwebhooks library).

const WHSEC = /^whsec_((?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)$/;

/** The Standard Webhooks signing key of a secret. */
export function standardWebhooksKey(secret: string): Buffer {
  const match = WHSEC.exec(secret);
  return match && match[1] ? Buffer.from(match[1], "base64") : Buffer.from(secret, "utf8");
}

/** The headers that sign one attempt of one delivery. */
export function signatureHeaders(secret: string, eventId: string, body: string, at: Date): Record<string, string> {
  const timestamp = Math.floor(at.getTime() / 1000).toString();
  const standard = createHmac("sha256", standardWebhooksKey(secret)).update(`${eventId}.${timestamp}.${body}`).digest("base64");
  return {
    "x-persona-signature": createHmac("sha256", secret).update(body).digest("hex"),
    "webhook-id": eventId,
    "webhook-timestamp": timestamp,
    "webhook-signature": `v1,${standard}`,
  };
}
