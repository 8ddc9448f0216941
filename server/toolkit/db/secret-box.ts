import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, type Hmac } from "node:crypto";
import type { Knex } from "knex";
import { instanceSecret } from "./instance-secrets.ts";

// Secrets the service must read back in the clear (webhook signing secrets, bot tokens, mails
// waiting to be sent, idempotent answers that hold a new credential) are encrypted at rest:
// AES-256-GCM under a key derived from SECRETS_KEY for one purpose, so that a value sealed for one
// use cannot be opened as another. Stored as `v1.` + base64url(iv | tag | ciphertext).

const VERSION = "v1.";
const IV_BYTES = 12;
const TAG_BYTES = 16;

export class SecretBox {
  readonly #key: Buffer;

  /** `purpose` is the HKDF info string: one per kind of sealed value, never reused for another. */
  constructor(secretsKey: string, purpose: string) {
    this.#key = Buffer.from(hkdfSync("sha256", secretsKey, "", purpose, 32));
  }

  seal(plain: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv);
    const sealed = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
    return VERSION + Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString("base64url");
  }

  /**
   * A keyed hash (HMAC-SHA256) under the box's key: a digest of something secret (a request body
   * with a password) that only the key's holder can compute, so a reader of the table cannot test
   * guesses against it. Use a box of its own purpose for it, not one that also seals.
   */
  keyedHash(): Hmac {
    return createHmac("sha256", this.#key);
  }

  open(stored: string): string {
    if (!stored.startsWith(VERSION)) throw new Error("unknown secret format");
    const raw = Buffer.from(stored.slice(VERSION.length), "base64url");
    const decipher = createDecipheriv("aes-256-gcm", this.#key, raw.subarray(0, IV_BYTES));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
  }
}

const boxes = new WeakMap<Knex, Map<string, Promise<SecretBox>>>();

/**
 * This installation's box for `purpose`: SECRETS_KEY, else the key generated once and kept in the
 * database (instance secret `secrets_key`). Made once per database and purpose.
 */
export function secretBox(knex: Knex, configured: string | undefined, purpose: string): Promise<SecretBox> {
  let byPurpose = boxes.get(knex);
  if (!byPurpose) boxes.set(knex, (byPurpose = new Map()));
  let box = byPurpose.get(purpose);
  if (!box) {
    box = instanceSecret(knex, "secrets_key", configured).then((key) => new SecretBox(key, purpose));
    box.catch(() => byPurpose.delete(purpose));
    byPurpose.set(purpose, box);
  }
  return box;
}
