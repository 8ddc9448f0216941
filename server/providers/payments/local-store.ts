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

/** Active subscriptions whose period ended by `at` (Unix seconds). */
export async function dueLocalSubscriptions<T>(knex: Knex, at: number): Promise<LocalObject<T>[]> {
  const rows = await knex("local_payment_objects")
    .where({ kind: "subscription" })
    .whereRaw("data->>'status' = 'active' AND (data->>'current_period_end')::bigint <= ?", [at])
    .orderBy("id")
    .select("id", "kind", "user_id", "data");
  return rows.map((row) => ({ id: row.id, kind: row.kind, userId: row.user_id, data: row.data as T }));
}

export async function countLocalObjects(knex: Knex, kind: LocalKind): Promise<number> {
  const row = await knex("local_payment_objects").where({ kind }).count<{ count: string | number }>({ count: "*" }).first();
  return Number(row?.count ?? 0);
}
