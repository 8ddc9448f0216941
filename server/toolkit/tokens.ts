import { createHash, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import { jwtVerify, SignJWT, errors as joseErrors } from "jose";

export const ACCESS_TOKEN_TTL_S = 3600;
export const REFRESH_TOKEN_TTL_MS = 30 * 24 * 60 * 60 * 1000;

export interface AccessClaims {
  /** User id. */
  sub: string;
  /** Session (login or OAuth grant) the token belongs to; revoking the session revokes the token. */
  sid: string;
  /** OAuth client, for tokens issued to a third-party app. */
  cid?: string;
  /** Space-separated scopes of an OAuth token; absent for a session token (which has all). */
  scope?: string;
}

export class TokenSigner {
  readonly #key: Uint8Array;

  constructor(secret: string) {
    this.#key = new TextEncoder().encode(secret);
  }

  sign(claims: AccessClaims, now: Date): Promise<string> {
    const issuedAt = Math.floor(now.getTime() / 1000);
    return new SignJWT({ sid: claims.sid, ...(claims.cid ? { cid: claims.cid } : {}), ...(claims.scope ? { scope: claims.scope } : {}) })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(claims.sub)
      .setIssuedAt(issuedAt)
      // Two tokens of one session issued in the same second must still differ (a refresh is a new token).
      .setJti(randomUUID())
      .setExpirationTime(issuedAt + ACCESS_TOKEN_TTL_S)
      .sign(this.#key);
  }

  /** The claims of a valid token; undefined for anything else (bad signature, `alg: none`, expired). */
  async verify(token: string, now: Date): Promise<AccessClaims | undefined> {
    try {
      const { payload } = await jwtVerify(token, this.#key, { algorithms: ["HS256"], currentDate: now, requiredClaims: ["exp", "sub"] });
      if (typeof payload.sub !== "string" || typeof payload.sid !== "string") return undefined;
      return {
        sub: payload.sub,
        sid: payload.sid,
        ...(typeof payload.cid === "string" ? { cid: payload.cid } : {}),
        ...(typeof payload.scope === "string" ? { scope: payload.scope } : {}),
      };
    } catch (error) {
      if (error instanceof joseErrors.JOSEError) return undefined;
      throw error;
    }
  }
}

/** A 256-bit random secret, URL-safe. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString("base64url");
}

/** Secrets are stored as their SHA-256; a leaked table gives nothing usable. */
export function sha256(value: string): string {
  return createHash("sha256").update(value).digest("hex");
}

export function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(sha256(a));
  const right = Buffer.from(sha256(b));
  return timingSafeEqual(left, right);
}

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** `pk_` + 32 random bytes in base62 (DECISIONS: API keys). */
export function newApiKey(): { key: string; hint: string } {
  let value = BigInt(`0x${randomBytes(32).toString("hex")}`);
  let digits = "";
  while (value > 0n) {
    digits = BASE62[Number(value % 62n)]! + digits;
    value /= 62n;
  }
  const key = `pk_${digits.padStart(43, "0")}`;
  return { key, hint: `pk_…${key.slice(-4)}` };
}
