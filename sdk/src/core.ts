import type { Client } from "openapi-fetch";
import { APIPromise, type Answered } from "./api-promise.ts";
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

type RawResult = { data?: unknown; error?: unknown; response: Response };

/** A raw call's data with its Response, or the typed error of its error answer (thrown). */
export function settle<Result extends RawResult>({ data, error, response }: Result): Answered<NonNullable<Result["data"]>> {
  if (!response.ok) throw errorFromResponse(response, error);
  return { data: data as NonNullable<Result["data"]>, response };
}

/** Resolves a raw call to its data, or rejects with the typed error of its error answer. */
export function unwrap<Result extends RawResult>(call: Promise<Result>): APIPromise<NonNullable<Result["data"]>> {
  return new APIPromise(call.then(settle));
}

/** Resolves a raw call whose success has no body (204) to undefined, or rejects with the typed error of its error answer. */
export function unwrapEmpty<Result extends RawResult>(call: Promise<Result>): APIPromise<void> {
  return new APIPromise(call.then((result) => ({ data: undefined, response: settle(result).response })));
}

/**
 * A raw call whose success must carry a body (bytes, a stream): `convert` turns it into the data.
 * An answer without one is an error, typed by its status.
 */
export function unwrapBody<Result extends RawResult, Data>(call: Promise<Result>, convert: (body: NonNullable<Result["data"]>) => Data): APIPromise<Data> {
  return new APIPromise(
    call.then(({ data, error, response }) => {
      if (!response.ok || !data) throw errorFromResponse(response, error);
      return { data: convert(data as NonNullable<Result["data"]>), response };
    }),
  );
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
  return new PageIterator<Item, Page>((q) => unwrap(fetchPage(q)) as APIPromise<Page>, { ...query }, cursor);
}
