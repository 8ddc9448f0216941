import { invalidField } from "./error-catalogue.ts";

// Paging parameters of list operations, read once with the contract's defaults.

/** The contract's default page size (common.tsp PageQuery); an area with another default passes its own. */
export const DEFAULT_PAGE_LIMIT = 20;

/** Which slice of a list to answer. */
export interface PageWindow {
  limit: number;
  offset: number;
}

/**
 * The `limit`/`offset` of a list operation's query. The validator fills the contract's defaults in
 * and refuses values out of range; the defaults here hold for a caller that bypasses it (tests).
 */
export function pageWindow(query: { limit?: number; offset?: number }, defaultLimit = DEFAULT_PAGE_LIMIT): PageWindow {
  return { limit: pageNumber(query, "limit", defaultLimit), offset: pageNumber(query, "offset", 0) };
}

/**
 * A paging number as the contract means it: an int32 of at least 0. The validator coerces query
 * text to numbers, and `1e309`, `-1e309` and `Infinity` become ±Infinity on the way, past its
 * bounds (a fuzzer finding): refused here so that no list reaches its SQL with them.
 */
export function pageNumber(query: { limit?: number; offset?: number }, name: "limit" | "offset", fallback: number): number {
  const value = query[name];
  if (value === undefined) return fallback;
  if (Number.isInteger(value) && value >= 0 && value <= 2 ** 31 - 1) return value;
  throw invalidField(`/query/${name}`, "must be an integer from 0 to 2147483647", `Invalid request: query.${name} must be an integer from 0 to 2147483647`);
}

/** The contract's `Page<T>` envelope: `{data, total, limit, offset}`. */
export function pageBody<Row, Item>(page: { rows: Row[]; total: number }, window: PageWindow, view: (row: Row) => Item) {
  return { data: page.rows.map(view), total: page.total, limit: window.limit, offset: window.offset };
}

/** The `{data, has_more, total}` envelope of lists that say whether items remain after this page. */
export function hasMoreBody<Row, Item>(page: { rows: Row[]; total: number }, window: PageWindow, view: (row: Row) => Item) {
  return { data: page.rows.map(view), has_more: window.offset + page.rows.length < page.total, total: page.total };
}
