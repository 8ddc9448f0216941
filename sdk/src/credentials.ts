import { ConnectionError, readError, TimeoutError } from "./errors.ts";
import type { Fetch, Schemas } from "./types.ts";

/** A token pair as the service issues it; `onTokens` receives it after every refresh. */
export interface Tokens {
  accessToken: string;
  refreshToken: string;
  /** Lifetime of the access token in seconds. */
  expiresIn: number;
}

/** Credentials of a client: an API key, a session token pair, or none (register, login, public reads). */
export type Credentials =
  | { apiKey: string; accessToken?: never; refreshToken?: never }
  | {
      apiKey?: never;
      accessToken: string;
      refreshToken: string;
      /** Called with each new pair after a refresh: persist it, the old refresh token is spent. */
      onTokens?: (tokens: Tokens) => void | Promise<void>;
    }
  | { apiKey?: never; accessToken?: never; refreshToken?: never };

/** Puts credentials on requests and, for token pairs, renews them after a 401. */
export interface Authenticator {
  /** Sets the credential header unless the caller set one; returns the access token used, if any. */
  apply(headers: Headers): string | undefined;
  /** After a 401 with `usedToken`: true when a (possibly shared) refresh produced a token to retry with. */
  refresh?(usedToken: string): Promise<boolean>;
}

const hasOwnCredential = (headers: Headers) => headers.has("authorization") || headers.has("x-api-key");

export function apiKeyAuthenticator(apiKey: string): Authenticator {
  return {
    apply(headers) {
      if (!hasOwnCredential(headers)) headers.set("X-API-Key", apiKey);
      return undefined;
    },
  };
}

export const anonymous: Authenticator = { apply: () => undefined };

type RefreshCall = (refreshToken: string) => Promise<Response>;

/**
 * `POST /v1/auth/refresh` straight through fetch, past the transport: a refresh is never retried (a
 * repeat would present the single-use token twice and revoke the login) and never triggers a refresh.
 */
export function refreshCall(baseUrl: string, fetch: Fetch, timeout: number): RefreshCall {
  return async (refreshToken) => {
    const timer = new AbortController();
    const handle = setTimeout(() => timer.abort(new TimeoutError(`The token refresh got no answer within ${timeout} ms`)), timeout);
    try {
      return await fetch(
        new Request(`${baseUrl}/v1/auth/refresh`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ refresh_token: refreshToken }),
          signal: timer.signal,
        }),
      );
    } catch (error) {
      throw timer.signal.aborted ? timer.signal.reason : new ConnectionError("The token refresh failed to connect", error);
    } finally {
      // Cleared rather than left running: a pending timer would keep a short Node script alive.
      clearTimeout(handle);
    }
  };
}

/**
 * Session tokens with single-flight refresh. A refresh token is single-use and the service revokes
 * the whole login when one is presented twice, so concurrent 401s must share one refresh call, and
 * a 401 for a token that has already been replaced just retries with the new one.
 */
export class TokenAuthenticator implements Authenticator {
  #tokens: { accessToken: string; refreshToken: string };
  #inFlight: Promise<boolean> | undefined;
  // A refresh token the service refused: asking again with it cannot succeed.
  #refused: string | undefined;
  readonly #call: RefreshCall;
  readonly #onTokens: ((tokens: Tokens) => void | Promise<void>) | undefined;

  constructor(tokens: { accessToken: string; refreshToken: string }, call: RefreshCall, onTokens?: (tokens: Tokens) => void | Promise<void>) {
    this.#tokens = { accessToken: tokens.accessToken, refreshToken: tokens.refreshToken };
    this.#call = call;
    this.#onTokens = onTokens;
  }

  get tokens(): { accessToken: string; refreshToken: string } {
    return { ...this.#tokens };
  }

  apply(headers: Headers): string | undefined {
    if (hasOwnCredential(headers)) return undefined;
    headers.set("Authorization", `Bearer ${this.#tokens.accessToken}`);
    return this.#tokens.accessToken;
  }

  refresh(usedToken: string): Promise<boolean> {
    if (usedToken !== this.#tokens.accessToken) return Promise.resolve(true);
    if (this.#inFlight) return this.#inFlight;
    if (this.#refused === this.#tokens.refreshToken) return Promise.resolve(false);
    this.#inFlight = this.#refresh().finally(() => {
      this.#inFlight = undefined;
    });
    return this.#inFlight;
  }

  async #refresh(): Promise<boolean> {
    const refreshToken = this.#tokens.refreshToken;
    const response = await this.#call(refreshToken);
    if (response.status === 400 || response.status === 401) {
      await response.body?.cancel();
      this.#refused = refreshToken;
      return false;
    }
    if (!response.ok) throw await readError(response);
    const pair = (await response.json()) as Schemas["TokenPair"];
    this.#tokens = { accessToken: pair.access_token, refreshToken: pair.refresh_token };
    await this.#onTokens?.({ accessToken: pair.access_token, refreshToken: pair.refresh_token, expiresIn: pair.expires_in });
    return true;
  }
}
