import { createClient, errorFromResponse, type PersonaClient, type Schemas, type Tokens } from "../sdk/src/index.ts";

/**
 * The CLI's way to the API: the SDK (`@persona-platform/sdk`, imported from source). Operations
 * the SDK has no helper for go through its typed `raw` client, and are the only ones written here.
 */
export type ApiClient = PersonaClient;
export type { Schemas, Tokens };

export type ClientOptions =
  | { baseUrl: string }
  | { baseUrl: string; apiKey: string }
  | { baseUrl: string; accessToken: string; refreshToken: string; onTokens: (tokens: Tokens) => Promise<void> | void };

export function createApiClient(options: ClientOptions): ApiClient {
  return createClient(options as Parameters<typeof createClient>[0]);
}

async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok || data === undefined) throw errorFromResponse(response, error);
  return data;
}

/** `POST /v1/api-keys`: a key with the coarse read/chat/admin scopes (no SDK helper). */
export function createSimpleApiKey(client: ApiClient, body: Schemas["SimpleApiKeyCreate"]): Promise<Schemas["SimpleApiKeyCreated"]> {
  return unwrap(client.raw.POST("/v1/api-keys", { body }));
}

/** `POST /v1/auth/export-data` (no SDK helper). */
export function requestDataExport(client: ApiClient): Promise<Schemas["DataExport"]> {
  return unwrap(client.raw.POST("/v1/auth/export-data"));
}
