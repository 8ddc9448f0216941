import type { Knex } from "knex";

/** Stored responses are replayed for 24 hours. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

export interface StoredRequest {
  operation_id: string;
  request_hash: string;
  state: "in_progress" | "done";
  status: number | null;
  /** The stored JSON answer, sealed (issue 31 L3). */
  response_sealed: string | null;
  response_headers: Record<string, string> | null;
  created_at: Date;
}

/** Claims (scope, key) for a new request; false when a live claim exists already. */
export async function claimKey(
  knex: Knex,
  scope: string,
  key: string,
  operationId: string,
  requestHash: string,
  now: Date,
): Promise<boolean> {
  // An expired claim is dropped first, so the key can be used again after 24 h.
  await knex("idempotency_keys")
    .where({ scope, key })
    .andWhere("created_at", "<", new Date(now.getTime() - IDEMPOTENCY_TTL_MS))
    .delete();
  const inserted = await knex("idempotency_keys")
    .insert({ scope, key, operation_id: operationId, request_hash: requestHash, state: "in_progress", created_at: now })
    .onConflict(["scope", "key"])
    .ignore()
    .returning("key");
  return inserted.length === 1;
}

export async function findKey(knex: Knex, scope: string, key: string): Promise<StoredRequest | undefined> {
  return knex("idempotency_keys").where({ scope, key }).first();
}

/** Records the answer; `sealedBody` is its JSON body, sealed by the caller. */
export async function completeKey(
  knex: Knex,
  scope: string,
  key: string,
  response: { status: number; sealedBody: string; headers: Record<string, string> },
): Promise<void> {
  await knex("idempotency_keys")
    .where({ scope, key })
    .update({
      state: "done",
      status: response.status,
      response_sealed: response.sealedBody,
      response_headers: JSON.stringify(response.headers),
    });
}

/** Takes a finished key back to in-progress in one statement, so only one of concurrent retries gets it. */
export async function reclaimKey(knex: Knex, scope: string, key: string): Promise<boolean> {
  return (await knex("idempotency_keys").where({ scope, key, state: "done" }).update({ state: "in_progress" })) === 1;
}

export async function releaseKey(knex: Knex, scope: string, key: string): Promise<void> {
  await knex("idempotency_keys").where({ scope, key, state: "in_progress" }).delete();
}

export async function purgeExpiredIdempotencyKeys(knex: Knex, now: Date): Promise<number> {
  return knex("idempotency_keys")
    .where("created_at", "<", new Date(now.getTime() - IDEMPOTENCY_TTL_MS))
    .delete();
}
