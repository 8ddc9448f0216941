import type { Knex } from "knex";

export type LocalKind = "customer" | "checkout_session" | "subscription" | "invoice";

export interface LocalObject<T> {
  id: string;
  kind: LocalKind;
  userId: string;
  data: T;
}

export async function putLocalObject<T>(knex: Knex, object: LocalObject<T>, at: Date): Promise<void> {
  await knex("local_payment_objects")
    .insert({ id: object.id, kind: object.kind, user_id: object.userId, data: JSON.stringify(object.data), created_at: at })
    .onConflict("id")
    .merge(["data"]);
}

export async function getLocalObject<T>(knex: Knex, kind: LocalKind, id: string): Promise<LocalObject<T> | undefined> {
  const row = await knex("local_payment_objects").where({ id, kind }).first("id", "kind", "user_id", "data");
  return row && { id: row.id, kind: row.kind, userId: row.user_id, data: row.data as T };
}

/** The customer's objects of one kind, newest first. */
export async function localObjectsOf<T>(knex: Knex, kind: LocalKind, customerId: string, limit: number): Promise<T[]> {
  const rows = await knex("local_payment_objects")
    .where({ kind })
    .whereRaw("data->>'customer' = ?", [customerId])
    .orderBy([{ column: "created_at", order: "desc" }, { column: "id", order: "desc" }])
    .limit(limit)
    .select("data");
  return rows.map((row) => row.data as T);
}

/** Whether the user has a subscription the offline provider still bills (a pending cancellation included). */
export async function hasLiveLocalSubscription(knex: Knex, userId: string): Promise<boolean> {
  const row = await knex("local_payment_objects").where({ user_id: userId, kind: "subscription" }).whereRaw("data->>'status' = 'active'").first("id");
  return row !== undefined;
}

/** Locks the user's customer records until the transaction ends: the payments of one account queue up. */
export async function lockLocalCustomers(trx: Knex.Transaction, userId: string): Promise<void> {
  await trx("local_payment_objects").where({ user_id: userId, kind: "customer" }).forUpdate().select("id");
}

/** Active subscriptions whose period ended by `at` (Unix seconds). */
export async function dueLocalSubscriptions<T>(knex: Knex, at: number): Promise<LocalObject<T>[]> {
  const rows = await knex("local_payment_objects")
    .where({ kind: "subscription" })
    .whereRaw("data->>'status' = 'active' AND (data->>'current_period_end')::bigint <= ?", [at])
    .orderBy("id")
    .select("id", "kind", "user_id", "data");
  return rows.map((row) => ({ id: row.id, kind: row.kind, userId: row.user_id, data: row.data as T }));
}

/** The next invoice number: a sequence (migration 0025), so concurrent invoices never share one (issue 31 L1). */
export async function nextLocalInvoiceNumber(knex: Knex): Promise<number> {
  const result = await knex.raw<{ rows: { next: string | number }[] }>("SELECT nextval('local_invoice_numbers') AS next");
  return Number(result.rows[0]!.next);
}
