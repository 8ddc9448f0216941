import { init, list, type Core } from "../core.ts";
import { GeneratedAuth, GeneratedAuthApiKeys } from "../generated/resources.ts";
import type { PageIterator } from "../pagination.ts";
import type { RequestOptions, ResponseOf, Schemas } from "../types.ts";

/**
 * Accounts and sessions. The methods of its operations are generated from the contract
 * (GeneratedAuth); `apiKeys` is written here, for its list.
 *
 * @example
 * const anonymous = createClient({ baseUrl });
 * const session = await anonymous.auth.login({ email, password });
 * const client = createClient({ baseUrl, accessToken: session.access_token, refreshToken: session.refresh_token });
 * const me = await client.auth.me();
 */
export class Auth extends GeneratedAuth {
  /** The caller's API keys. */
  readonly apiKeys: ApiKeys;

  constructor(core: Core) {
    super(core);
    this.apiKeys = new ApiKeys(core);
  }
}

/** The caller's API keys, of both creation forms. */
export class ApiKeys extends GeneratedAuthApiKeys {
  /**
   * The caller's live keys, masked (one page: the list is not paged). A page iterator like the paged
   * lists', so that code iterating it keeps working if it ever is.
   * @example
   * for await (const key of client.auth.apiKeys.list()) console.log(key.name, key.key_hint);
   */
  list(options?: RequestOptions): PageIterator<Schemas["ApiKey"], ResponseOf<"api_keys_list">> {
    return list((_query) => this.core.raw.GET("/v1/auth/api-keys", init(options)));
  }
}
