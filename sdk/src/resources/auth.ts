import type { APIPromise } from "../api-promise.ts";
import { init, list, unwrap, type Core } from "../core.ts";
import type { PageIterator } from "../pagination.ts";
import type { IdempotentRequestOptions, RequestBody, RequestOptions, ResponseOf, Schemas } from "../types.ts";

/**
 * Accounts and sessions.
 *
 * @example
 * const anonymous = createClient({ baseUrl });
 * const session = await anonymous.auth.login({ email, password });
 * const client = createClient({ baseUrl, accessToken: session.access_token, refreshToken: session.refresh_token });
 * const me = await client.auth.me();
 */
export class Auth {
  readonly #core: Core;
  /** The caller's API keys. */
  readonly apiKeys: ApiKeys;

  constructor(core: Core) {
    this.#core = core;
    this.apiKeys = new ApiKeys(core);
  }

  /**
   * Creates an account; the answer is already signed in (user and token pair).
   * @example
   * const { user, access_token, refresh_token } = await client.auth.register({ email, username, password });
   */
  register(body: RequestBody<"auth_register">, options?: IdempotentRequestOptions): APIPromise<ResponseOf<"auth_register">> {
    return unwrap(this.#core.raw.POST("/v1/auth/register", { body, ...init(options) }));
  }

  /**
   * Signs in with e-mail and password; a wrong pair is an AuthenticationError. The right password of
   * an account scheduled for deletion is a PermissionDeniedError with code `account_pending_deletion`
   * (its `details` say until when): offer {@link Auth.restoreMe}.
   * @example
   * const { access_token, refresh_token } = await client.auth.login({ email, password });
   */
  login(body: RequestBody<"auth_login">, options?: RequestOptions): APIPromise<ResponseOf<"auth_login">> {
    return unwrap(this.#core.raw.POST("/v1/auth/login", { body, ...init(options) }));
  }

  /**
   * The signed-in user.
   * @example
   * const { username, plan } = await client.auth.me();
   */
  me(options?: RequestOptions): APIPromise<ResponseOf<"auth_get_me">> {
    return unwrap(this.#core.raw.GET("/v1/auth/me", init(options)));
  }

  /**
   * Changes the signed-in user's profile.
   * @example
   * await client.auth.updateMe({ display_name: "Ada" });
   */
  updateMe(body: RequestBody<"auth_update_me">, options?: RequestOptions): APIPromise<ResponseOf<"auth_update_me">> {
    return unwrap(this.#core.raw.PUT("/v1/auth/me", { body, ...init(options) }));
  }

  /**
   * Confirms the signed-in user's e-mail address with the token from the verification e-mail; a
   * spent, expired or unknown token is a BadRequestError.
   * @example
   * const { email_verified } = await client.auth.verifyEmail({ token });
   */
  verifyEmail(body: RequestBody<"auth_verify_email">, options?: RequestOptions): APIPromise<ResponseOf<"auth_verify_email">> {
    return unwrap(this.#core.raw.POST("/v1/auth/verify-email", { body, ...init(options) }));
  }

  /**
   * Asks for a password-reset e-mail; needs no credentials. The answer is the same whether or not
   * the address has an account.
   * @example
   * const anonymous = createClient({ baseUrl });
   * await anonymous.auth.forgotPassword({ email });
   */
  forgotPassword(body: RequestBody<"auth_forgot_password">, options?: RequestOptions): APIPromise<ResponseOf<"auth_forgot_password">> {
    return unwrap(this.#core.raw.POST("/v1/auth/forgot-password", { body, ...init(options) }));
  }

  /**
   * Sets a new password with the token from the reset e-mail; needs no credentials. Every credential
   * of the account ends (sessions, OAuth grants, API keys; the answer counts them), so sign in again.
   * A spent or expired token is a BadRequestError.
   * @example
   * const { revoked } = await anonymous.auth.resetPassword({ token, new_password: "Cassiopeia7night" });
   * const session = await anonymous.auth.login({ email, password: "Cassiopeia7night" });
   */
  resetPassword(body: RequestBody<"auth_reset_password">, options?: RequestOptions): APIPromise<ResponseOf<"auth_reset_password">> {
    return unwrap(this.#core.raw.POST("/v1/auth/reset-password", { body, ...init(options) }));
  }

  /**
   * Deletes the signed-in user's account: it is disabled at once and its data purged after the
   * grace period (`grace_period_ends`), until which {@link Auth.restoreMe} undoes it. The client's
   * credentials stop working. The account's `password` confirms it; only a session from a login of
   * the last 10 minutes may leave it out (a BadRequestError naming `/body/password` otherwise; a
   * wrong password is a PermissionDeniedError and deletes nothing).
   * @example
   * const { grace_period_ends } = await client.auth.deleteMe({ password });
   */
  deleteMe(body: RequestBody<"auth_delete_me"> = {}, options?: RequestOptions): APIPromise<ResponseOf<"auth_delete_me">> {
    return unwrap(this.#core.raw.DELETE("/v1/auth/me", { body, ...init(options) }));
  }

  /**
   * Undoes the deletion of an account during its grace period; needs no credentials, only the
   * account's e-mail and password. Everything the account owns is back, with the API keys the
   * deletion revoked; the answer signs in (a new token pair). A wrong pair is an AuthenticationError;
   * an account not scheduled for deletion, or past its grace period, a ConflictError.
   * @example
   * try {
   *   await anonymous.auth.login({ email, password });
   * } catch (error) {
   *   if (!(error instanceof PermissionDeniedError && error.code === "account_pending_deletion")) throw error;
   *   const { access_token, refresh_token, restored } = await anonymous.auth.restoreMe({ email, password });
   * }
   */
  restoreMe(body: RequestBody<"auth_restore_me">, options?: RequestOptions): APIPromise<ResponseOf<"auth_restore_me">> {
    return unwrap(this.#core.raw.POST("/v1/auth/me/restore", { body, ...init(options) }));
  }

  /**
   * Asks for an export of all the caller's data. A job builds the archive and its signed download
   * link is e-mailed; while one is processing, asking again answers that same export.
   * @example
   * const { export_id, status } = await client.auth.exportData();
   */
  exportData(options?: RequestOptions): APIPromise<ResponseOf<"auth_export_data">> {
    return unwrap(this.#core.raw.POST("/v1/auth/export-data", init(options)));
  }
}

export class ApiKeys {
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
  }

  /**
   * Creates a scoped key; `key` in the answer is the only time the full secret is shown.
   * @example
   * const { key } = await client.auth.apiKeys.create({ name: "ci", scopes: ["personas:read"] });
   * const ci = createClient({ baseUrl, apiKey: key });
   */
  create(body: RequestBody<"api_keys_create">, options?: IdempotentRequestOptions): APIPromise<ResponseOf<"api_keys_create">> {
    return unwrap(this.#core.raw.POST("/v1/auth/api-keys", { body, ...init(options) }));
  }

  /**
   * Creates a key with the alternative scopes `read` (every GET outside the admin-only areas), `chat`
   * (`read` plus sending messages and voice) or `admin`; `key` in the answer is shown only once.
   * Either form's keys are listed, used and revoked alike.
   * @example
   * const { key } = await client.auth.apiKeys.createSimple({ name: "nightly backup", scopes: ["read"], expires_in_days: 90 });
   */
  createSimple(body: RequestBody<"api_keys_create_simple">, options?: IdempotentRequestOptions): APIPromise<ResponseOf<"api_keys_create_simple">> {
    return unwrap(this.#core.raw.POST("/v1/api-keys", { body, ...init(options) }));
  }

  /**
   * The caller's live keys, masked (one page: the list is not paged).
   * @example
   * for await (const key of client.auth.apiKeys.list()) console.log(key.name, key.key_hint);
   */
  list(options?: RequestOptions): PageIterator<Schemas["ApiKey"], ResponseOf<"api_keys_list">> {
    return list((_query) => this.#core.raw.GET("/v1/auth/api-keys", init(options)));
  }

  /**
   * Revokes a key; requests with it answer 401 at once. Revoking it again is a NotFoundError.
   * @example
   * await client.auth.apiKeys.revoke(key.id);
   */
  revoke(id: string, options?: RequestOptions): APIPromise<ResponseOf<"api_keys_revoke">> {
    return unwrap(this.#core.raw.DELETE("/v1/auth/api-keys/{id}", { params: { path: { id } }, ...init(options) }));
  }
}
