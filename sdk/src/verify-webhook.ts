import type { Schemas } from "./types.ts";

// Verifying a delivery on the receiver's side, with Web Crypto only (browsers, Node, Deno, workers).
// Both signatures the service sends are checked when present: `X-Persona-Signature` (hex
// HMAC-SHA256 of the raw body, keyed with the secret) and the Standard Webhooks headers
// (`webhook-signature` over `id.timestamp.body`, keyed with the base64 part of a `whsec_` secret, or
// the secret's bytes otherwise), whose timestamp must be within the tolerance.

export class WebhookVerificationError extends Error {
  override name = "WebhookVerificationError";
}

export interface VerifyWebhookOptions {
  /** Largest age (or lead) of `webhook-timestamp`, in seconds. Default 300. */
  toleranceSeconds?: number;
  /** The clock, for tests. */
  now?: () => Date;
}

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

const encoder = new TextEncoder();
const WHSEC = /^whsec_((?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)$/;

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

function fromBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

function toBase64(bytes: Uint8Array): string {
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text);
}

async function hmac(key: Uint8Array, message: Uint8Array): Promise<Uint8Array> {
  const imported = await crypto.subtle.importKey("raw", key as BufferSource, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", imported, message as BufferSource));
}

function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}

/**
 * Checks a webhook delivery and returns its event. Pass the raw body exactly as received (not
 * re-serialized JSON), the request headers and the webhook's secret; throws
 * `WebhookVerificationError` on a missing or wrong signature or a stale timestamp.
 *
 * @example
 * app.post("/hooks", express.raw({ type: "application/json" }), async (req, res) => {
 *   const event = await verifyWebhook(req.body, req.headers, process.env.PERSONA_WEBHOOK_SECRET!);
 *   console.log(event.type, event.id); // deduplicate by event.id: delivery is at least once
 *   res.sendStatus(204);
 * });
 */
export async function verifyWebhook(
  rawBody: string | Uint8Array,
  headers: HeaderSource,
  secret: string,
  options: VerifyWebhookOptions = {},
): Promise<Schemas["WebhookEvent"]> {
  const body = typeof rawBody === "string" ? rawBody : new TextDecoder().decode(rawBody);
  const bodyBytes = typeof rawBody === "string" ? encoder.encode(rawBody) : rawBody;
  const persona = header(headers, "x-persona-signature");
  const standard = header(headers, "webhook-signature");
  if (!persona && !standard) throw new WebhookVerificationError("The request carries no webhook signature");

  if (persona) {
    const digest = [...(await hmac(encoder.encode(secret), bodyBytes))].map((byte) => byte.toString(16).padStart(2, "0")).join("");
    if (!sameText(persona.trim().toLowerCase(), digest)) throw new WebhookVerificationError("X-Persona-Signature does not match the body");
  }
  if (standard) {
    const id = header(headers, "webhook-id");
    const timestamp = header(headers, "webhook-timestamp");
    if (!id || !timestamp || !/^\d+$/.test(timestamp)) throw new WebhookVerificationError("webhook-id or webhook-timestamp is missing");
    const now = Math.floor((options.now?.() ?? new Date()).getTime() / 1000);
    if (Math.abs(now - Number(timestamp)) > (options.toleranceSeconds ?? 300)) throw new WebhookVerificationError("webhook-timestamp is outside the tolerance");
    const match = WHSEC.exec(secret);
    const key = match && match[1] ? fromBase64(match[1]) : encoder.encode(secret);
    const expected = toBase64(await hmac(key, encoder.encode(`${id}.${timestamp}.${body}`)));
    const valid = standard.split(" ").some((entry) => {
      const [version, signature] = entry.split(",");
      return version === "v1" && signature !== undefined && sameText(signature, expected);
    });
    if (!valid) throw new WebhookVerificationError("webhook-signature does not match the body");
  }
  try {
    return JSON.parse(body) as Schemas["WebhookEvent"];
  } catch {
    throw new WebhookVerificationError("The body is not JSON");
  }
}
