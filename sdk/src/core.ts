import type { Client } from "openapi-fetch";
import { errorFromResponse } from "./errors.ts";
import { PageIterator, type Cursor, type Query } from "./pagination.ts";
import type { IdempotentRequestOptions, paths } from "./types.ts";

/** The openapi-fetch client typed from the contract: `raw.GET("/v1/personas/{id}", ...)`. */
export type RawClient = Client<paths>;

/** What the resource helpers share: the raw client and the client's settings. */
export interface Core {
  raw: RawClient;
  timeout: number;
}

/** Resolves a raw call to its data, or throws the typed error of its error answer. */
export async function unwrap<Result extends { data?: unknown; error?: unknown; response: Response }>(
  call: Promise<Result>,
): Promise<NonNullable<Result["data"]>> {
  const { data, error, response } = await call;
  if (!response.ok) throw errorFromResponse(response, error);
  return data as NonNullable<Result["data"]>;
}

/** The fetch options of a helper call: signal and headers, the Idempotency-Key among them. */
export function init(options: IdempotentRequestOptions = {}): { signal?: AbortSignal; headers: Record<string, string> } {
  const headers = { ...options.headers };
  if (options.idempotencyKey) headers["Idempotency-Key"] = options.idempotencyKey;
  return { ...(options.signal ? { signal: options.signal } : {}), headers };
}

/** A page iterator over `fetchPage`, which performs one raw list call for a query. */
export function list<Item, Page extends { data: Item[] }>(
  fetchPage: (query: Query) => Promise<{ data?: Page; error?: unknown; response: Response }>,
  query: object = {},
  cursor: Cursor = "offset",
): PageIterator<Item, Page> {
  return new PageIterator<Item, Page>((q) => unwrap(fetchPage(q)) as Promise<Page>, { ...query }, cursor);
}
