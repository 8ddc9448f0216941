import openapiFetch, { type ClientPathsWithMethod, type MaybeOptionalInit } from "openapi-fetch";
import { list, type Core, type RawClient } from "./core.ts";
import { anonymous, apiKeyAuthenticator, refreshCall, TokenAuthenticator, type Authenticator, type Credentials } from "./credentials.ts";
import { GeneratedClient } from "./generated/client.ts";
import { idempotencyMiddleware } from "./idempotency.ts";
import type { Cursor, PageIterator } from "./pagination.ts";
import { createTransport } from "./transport.ts";
import type { Fetch, paths } from "./types.ts";

// In the CommonJS build, esbuild's Node interop hands over openapi-fetch's whole `exports` object
// as the default import (its CJS file sets `exports.default` without `__esModule`): unwrap it there.
const createFetchClient: typeof openapiFetch =
  typeof openapiFetch === "function" ? openapiFetch : (openapiFetch as unknown as { default: typeof openapiFetch }).default;

export interface ClientOptions {
  /** A fetch to use instead of globalThis.fetch (a proxy agent, a test double). */
  fetch?: (request: Request) => Promise<Response>;
  /** Milliseconds to wait for an answer's headers (and, on a chat stream, between chunks). Default 60 000. */
  timeout?: number;
  /** Retries of a failed attempt that is safe to repeat (see README: Retries). Default 2. */
  maxRetries?: number;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
}

export type ClientCredentials = { baseUrl: string } & Credentials;

type GetPath = ClientPathsWithMethod<RawClient, "get">;
type GetJson<Path extends GetPath> = paths[Path]["get"] extends { responses: { 200: { content: { "application/json": infer Body } } } }
  ? Body
  : never;
/** GET operations whose answer is a list (`{ data: [...] }`). */
export type ListPath = { [Path in GetPath]: GetJson<Path> extends { data: unknown[] } ? Path : never }[GetPath];
type ListJson<Path extends GetPath> = Extract<GetJson<Path>, { data: unknown[] }>;

/**
 * A Persona API client. Create it with {@link createClient}. Its areas (`client.personas`,
 * `client.conversations`, ...) come from the contract (GeneratedClient, sdk/src/generated/client.ts).
 */
export class PersonaClient extends GeneratedClient {
  /** The typed openapi-fetch client, for operations without a helper; it returns `{ data, error, response }`. */
  readonly raw: RawClient;
  readonly #authenticator: Authenticator;

  constructor(core: Core, authenticator: Authenticator) {
    super(core);
    this.raw = core.raw;
    this.#authenticator = authenticator;
  }

  /** The current session token pair (after any refresh), or undefined for an API key or anonymous client. */
  get tokens(): { accessToken: string; refreshToken: string } | undefined {
    return this.#authenticator instanceof TokenAuthenticator ? this.#authenticator.tokens : undefined;
  }

  /**
   * A page iterator over any list operation, for the lists without a helper. Unpaged lists give one
   * page; `cursor: "before"` pages by the last item's id (message lists).
   * @example
   * for await (const invoice of client.paginate("/v1/billing/invoices", { params: { query: { limit: 50 } } })) {
   *   console.log(invoice.id);
   * }
   */
  paginate<Path extends ListPath>(
    path: Path,
    init?: MaybeOptionalInit<paths[Path], "get">,
    options: { cursor?: Cursor } = {},
  ): PageIterator<ListJson<Path>["data"][number], ListJson<Path>> {
    const params = (init as { params?: { query?: object; path?: object } } | undefined)?.params;
    // The path's own generics are beyond what TypeScript can check through this indirection; the
    // signature above is what keeps callers honest.
    const get = this.raw.GET as unknown as (path: string, init: object) => Promise<{ data?: ListJson<Path>; error?: unknown; response: Response }>;
    return list((query) => get(path, { ...init, params: { ...params, query } }), params?.query ?? {}, options.cursor);
  }
}

/**
 * Creates a client. Credentials are an API key, a session token pair (renewed automatically after
 * a 401, once for all concurrent calls), or nothing (register, login).
 *
 * @example
 * import { createClient } from "@persona-platform/sdk";
 *
 * const client = createClient({ baseUrl: "http://127.0.0.1:3000", apiKey: process.env.PERSONA_API_KEY! });
 * const persona = await client.personas.create({ name: "Nova", instructions: "Explain astronomy briefly." });
 *
 * const session = createClient(
 *   { baseUrl, accessToken, refreshToken, onTokens: (tokens) => save(tokens) },
 *   { timeout: 30_000, maxRetries: 3 },
 * );
 */
export function createClient(credentials: ClientCredentials, options: ClientOptions = {}): PersonaClient {
  const baseUrl = credentials.baseUrl.replace(/(?<!\/)\/+$/, "");
  const timeout = options.timeout ?? 60_000;
  const maxRetries = options.maxRetries ?? 2;
  // Late-bound so that a test or polyfill that replaces globalThis.fetch after creation is honoured.
  const baseFetch: Fetch = options.fetch ?? ((request) => globalThis.fetch(request));
  const authenticator = authenticatorFor(credentials, baseUrl, baseFetch, timeout);
  const raw = createFetchClient<paths>({
    baseUrl,
    fetch: createTransport({ fetch: baseFetch, auth: authenticator, timeout, maxRetries }),
    ...(options.headers ? { headers: options.headers } : {}),
  });
  raw.use(idempotencyMiddleware);
  return new PersonaClient({ raw, timeout }, authenticator);
}

function authenticatorFor(credentials: ClientCredentials, baseUrl: string, fetch: Fetch, timeout: number): Authenticator {
  if (credentials.apiKey !== undefined) return apiKeyAuthenticator(credentials.apiKey);
  if (credentials.accessToken !== undefined) {
    return new TokenAuthenticator(credentials, refreshCall(baseUrl, fetch, timeout), credentials.onTokens);
  }
  return anonymous;
}
