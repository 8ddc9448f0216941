import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import type { Knex } from "knex";
import { instanceSecret } from "../auth/secrets.ts";

// Webhook secrets are needed in the clear to sign every delivery, so they are encrypted (not hashed)
// at rest: AES-256-GCM under a key derived from SECRETS_KEY. Stored as `v1.` + base64url(iv | tag | ciphertext).

const VERSION = "v1.";
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A new secret as Standard Webhooks writes them: `whsec_` + base64 of 24 random bytes. */
export function generateSecret(): string {
  return `whsec_${randomBytes(24).toString("base64")}`;
}

export class SecretBox {
  readonly #key: Buffer;

  constructor(secretsKey: string) {
    this.#key = Buffer.from(hkdfSync("sha256", secretsKey, "", "persona webhook secrets v1", 32));
  }

  seal(plain: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv);
    const sealed = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
    return VERSION + Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString("base64url");
  }

  open(stored: string): string {
    if (!stored.startsWith(VERSION)) throw new Error("unknown secret format");
    const raw = Buffer.from(stored.slice(VERSION.length), "base64url");
    const decipher = createDecipheriv("aes-256-gcm", this.#key, raw.subarray(0, IV_BYTES));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
  }
}

const boxes = new WeakMap<Knex, Promise<SecretBox>>();

/** This installation's box: SECRETS_KEY, else the key generated once and kept in the database. */
export function secretBox(knex: Knex, configured: string | undefined): Promise<SecretBox> {
  let box = boxes.get(knex);
  if (!box) {
    box = instanceSecret(knex, "secrets_key", configured).then((key) => new SecretBox(key));
    box.catch(() => boxes.delete(knex));
    boxes.set(knex, box);
  }
  return box;
}
