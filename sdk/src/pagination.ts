import { APIPromise } from "./api-promise.ts";
import type { WithResponse } from "./response-meta.ts";

/** The shape every list answer shares; the paging fields tell which kind of list it is. */
export interface ListPage<Item> {
  data: Item[];
  has_more?: boolean;
  total?: number;
  limit?: number;
  offset?: number;
}

export type Query = Record<string, unknown>;

/**
 * How the next page is asked for: `offset` advances `offset` by the page's length; `before` asks for
 * items older than the page's last one (messages: stable while new ones arrive).
 */
export type Cursor = "offset" | "before";

/**
 * The query of the page after `page`, or undefined at the end. A list whose answer has neither
 * `has_more` nor `offset` is unpaged: its one page is all there is.
 */
export function nextPageQuery(page: ListPage<unknown>, query: Query, cursor: Cursor): Query | undefined {
  const count = page.data.length;
  if (count === 0 || page.has_more === false) return undefined;
  if (cursor === "before") {
    const last = page.data[count - 1] as { id?: unknown };
    if (page.has_more !== true || typeof last?.id !== "string") return undefined;
    const { offset: _offset, ...rest } = query;
    return { ...rest, before: last.id };
  }
  if (page.has_more !== true && page.offset === undefined) return undefined;
  const offset = (typeof query.offset === "number" ? query.offset : (page.offset ?? 0)) + count;
  if (page.has_more === undefined && page.total !== undefined && offset >= page.total) return undefined;
  return { ...query, offset };
}

/**
 * A list call. Iterate it with `for await` for every item across pages, call `pages()` for whole
 * pages, or await it for the first page only. Pages are fetched lazily, one at a time.
 *
 * @example
 * for await (const persona of client.personas.list({ limit: 50 })) console.log(persona.name);
 * const first = await client.personas.list();            // { data, total, limit, offset }
 * const all = await client.auth.apiKeys.list().toArray();
 * const { data: page, requestId, rateLimit } = await client.personas.list().withResponse();
 */
export class PageIterator<Item, Page extends { data: Item[] } = ListPage<Item>> implements AsyncIterable<Item>, PromiseLike<Page> {
  readonly #fetchPage: (query: Query) => Promise<Page>;
  readonly #query: Query;
  readonly #cursor: Cursor;
  #first: Promise<Page> | undefined;

  constructor(fetchPage: (query: Query) => Promise<Page>, query: Query = {}, cursor: Cursor = "offset") {
    this.#fetchPage = fetchPage;
    this.#query = query;
    this.#cursor = cursor;
  }

  #firstPage(): Promise<Page> {
    this.#first ??= this.#fetchPage(this.#query);
    return this.#first;
  }

  /** Every page in order, starting with the first. */
  async *pages(): AsyncGenerator<Page, void, undefined> {
    let page = await this.#firstPage();
    let query: Query | undefined = this.#query;
    for (;;) {
      yield page;
      query = nextPageQuery(page as ListPage<unknown>, query, this.#cursor);
      if (!query) return;
      page = await this.#fetchPage(query);
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Item, void, undefined> {
    for await (const page of this.pages()) yield* page.data;
  }

  /**
   * The first page with its answer's Response, request id and rate-limit state (the same request
   * as awaiting the list: the first page is fetched once). Later pages' answers are not kept; call
   * `client.raw` for those.
   */
  withResponse(): Promise<WithResponse<Page>> {
    const first = this.#firstPage();
    if (first instanceof APIPromise) return first.withResponse();
    return Promise.reject(new TypeError("This page iterator was built over pages without their responses"));
  }

  /** Every item of every page in one array; mind the size of long lists. */
  async toArray(): Promise<Item[]> {
    const items: Item[] = [];
    for await (const item of this) items.push(item);
    return items;
  }

  then<Result1 = Page, Result2 = never>(
    onfulfilled?: ((page: Page) => Result1 | PromiseLike<Result1>) | null,
    onrejected?: ((reason: unknown) => Result2 | PromiseLike<Result2>) | null,
  ): Promise<Result1 | Result2> {
    return this.#firstPage().then(onfulfilled, onrejected);
  }

  catch<Result = never>(onrejected?: ((reason: unknown) => Result | PromiseLike<Result>) | null): Promise<Page | Result> {
    return this.#firstPage().catch(onrejected);
  }

  finally(onfinally?: (() => void) | null): Promise<Page> {
    return this.#firstPage().finally(onfinally);
  }
}
