import { LRUCache } from "lru-cache";
import type { Notifications } from "../../toolkit/db/notifications.ts";
import type { Principal } from "../../toolkit/http/principal.ts";
import type { Logger } from "../../toolkit/logger.ts";
import type { Services } from "../../toolkit/services.ts";

/** Which cached credentials a revocation ends: a session's, an API key's, or all of a user's. */
export type Revoked = { sessionId: string } | { apiKeyId: string } | { userId: string };

const CHANNEL = "credentials_revoked";
const MAX_ENTRIES = 10_000;
// A safety net only: revocations reach every process through notifications at once. An entry this
// old is looked up again, so a notification lost with a broken connection costs at most this long.
const MAX_AGE_MS = 30_000;

export interface CachedCredential {
  principal: Principal;
  /** Epoch ms after which the credential itself is expired (access token `exp`, key `expires_at`). */
  validUntil: number;
  cachedAt: number;
  /** When an API key's `last_used_at` was last written by this process (or read as recent). */
  touchedAt: number;
}

/**
 * Resolved credentials (session and OAuth access tokens, API keys) of this process, so that a
 * request costs no database round trip and no signature check for a credential seen recently.
 *
 * Revocation stays immediate. `revokedCredentials` drops the matching entries in this process
 * before the revoking request answers, and tells every other process on the database through
 * `services.db.notifications` (PostgreSQL NOTIFY, delivered on commit), which drop theirs as soon
 * as it arrives. A lookup that was already under way when a revocation came is not cached (the
 * epoch moved), so a read from before the revocation cannot put the old state back. Until this
 * process listens, and after the listening connection was lost, nothing is served from the cache.
 */
export class CredentialCache {
  readonly #entries = new LRUCache<string, CachedCredential>({ max: MAX_ENTRIES });
  #epoch = 0;
  #listening = false;

  constructor(notifications: Notifications, log: Logger) {
    notifications
      .listen(CHANNEL, (payload) => this.drop(parse(payload)))
      .then(
        () => (this.#listening = true),
        (error: unknown) => log.warn({ err: error }, "credential cache off: cannot listen for revocations"),
      );
    // Notifications may have been missed while the connection was down: forget everything.
    notifications.onReconnect(() => this.clear());
  }

  /** The cached credential for `key`, if it is still valid at `now` (epoch ms). */
  lookup(key: string, now: number): CachedCredential | undefined {
    if (!this.#listening) return undefined;
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.validUntil <= now || now - entry.cachedAt >= MAX_AGE_MS || now < entry.cachedAt) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry;
  }

  /** Call before resolving a credential; pass the result to `store`. */
  begin(): number {
    return this.#epoch;
  }

  /** Keeps a resolved credential, unless a revocation came while it was being resolved. */
  store(key: string, entry: CachedCredential, epoch: number): void {
    if (this.#listening && epoch === this.#epoch) this.#entries.set(key, entry);
  }

  drop(revoked: Revoked | undefined): void {
    this.#epoch++;
    if (!revoked) return this.clear();
    for (const [key, { principal }] of this.#entries.entries()) {
      if (
        ("userId" in revoked && principal.userId === revoked.userId) ||
        ("sessionId" in revoked && principal.sessionId === revoked.sessionId) ||
        ("apiKeyId" in revoked && principal.apiKeyId === revoked.apiKeyId)
      ) {
        this.#entries.delete(key);
      }
    }
  }

  clear(): void {
    this.#epoch++;
    this.#entries.clear();
  }
}

function parse(payload: string): Revoked | undefined {
  try {
    const value = JSON.parse(payload) as Record<string, unknown>;
    for (const field of ["sessionId", "apiKeyId", "userId"] as const) {
      if (typeof value[field] === "string") return { [field]: value[field] } as Revoked;
    }
  } catch {
    // an unreadable payload: drop everything rather than guess
  }
  return undefined;
}

// One cache per database (tests run several services in one process).
const caches = new WeakMap<Notifications, CredentialCache>();

export function credentialCache(services: Pick<Services, "db" | "log">): CredentialCache {
  const { notifications } = services.db;
  let cache = caches.get(notifications);
  if (!cache) {
    cache = new CredentialCache(notifications, services.log);
    caches.set(notifications, cache);
  }
  return cache;
}

/**
 * Tells every process that credentials were revoked; call it after the revocation is committed.
 * This process forgets them before this returns, the others when the notification arrives.
 */
export async function revokedCredentials(services: Pick<Services, "db" | "log">, revoked: Revoked): Promise<void> {
  credentialCache(services).drop(revoked);
  await services.db.notifications.notify(CHANNEL, JSON.stringify(revoked));
}
