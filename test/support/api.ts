import createClient from "openapi-fetch";
import type { RawClient } from "../../sdk/src/core.ts";
import type { paths } from "../../sdk/src/types.ts";

// The contract-typed client of the tests: the SDK's raw openapi-fetch client without the SDK's
// transport, so a test sees every answer as the server gave it (no retries, no token refresh, no
// Idempotency-Key made up).

/** `api.GET("/v1/personas/{id}", { params: { path: { id } } })`: paths, parameters and bodies are the contract's. */
export type ApiClient = RawClient;

/** What an ApiClient call resolves to. */
export interface ApiAnswer {
  data?: unknown;
  error?: unknown;
  response: Response;
}

export function createApiClient(baseUrl: string, headers: Record<string, string> = {}): ApiClient {
  return createClient<paths>({ baseUrl, headers });
}

/** A FormData as the body of a multipart operation, whose contract types each binary part as a string. */
export const multipart = <Body>(form: FormData): Body => form as unknown as Body;
