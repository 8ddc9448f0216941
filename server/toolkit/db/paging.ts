import type { Knex } from "knex";
import type { PageWindow } from "../http/paging.ts";

/**
 * One page of `query` in `order`, with the number of rows the query matches over all pages.
 * `order` must end in a unique column (an id) so that equal sort keys keep one order and a row is
 * never shown on two pages or on none. The count runs on the same filter without the order.
 */
export async function offsetPage<Row>(query: Knex.QueryBuilder, order: string, window: PageWindow): Promise<{ rows: Row[]; total: number }> {
  const counting = query.clone().clearSelect().clearOrder().count<{ count: number }[]>({ count: "*" });
  const [rows, counted] = await Promise.all([
    query.clone().orderByRaw(order).limit(window.limit).offset(window.offset) as Promise<Row[]>,
    counting,
  ]);
  return { rows, total: Number(counted[0]?.count ?? 0) };
}
