import type { Knex } from "knex";

export interface OAuthClientRow {
  id: string;
  name: string;
  secret_hash: string;
  redirect_uris: string[];
  created_at: Date;
}

export interface OAuthCodeRow {
  code_hash: string;
  client_id: string;
  user_id: string;
  redirect_uri: string;
  scopes: string[];
  code_challenge: string | null;
  session_id: string | null;
  created_at: Date;
  expires_at: Date;
  used_at: Date | null;
  reused_at: Date | null;
}

export async function insertClient(knex: Knex, client: OAuthClientRow): Promise<void> {
  await knex("oauth_clients").insert(client);
}

export async function findClient(knex: Knex, id: string): Promise<OAuthClientRow | undefined> {
  return knex("oauth_clients").where({ id }).first();
}

export async function insertCode(knex: Knex, code: Omit<OAuthCodeRow, "session_id" | "used_at" | "reused_at">): Promise<void> {
  await knex("oauth_codes").insert(code);
}

export async function findCode(knex: Knex, codeHash: string): Promise<OAuthCodeRow | undefined> {
  return knex("oauth_codes").where({ code_hash: codeHash }).first();
}

/** Marks the code used; false if it already was (exactly one of two concurrent exchanges wins). */
export async function consumeCode(knex: Knex, codeHash: string, now: Date): Promise<boolean> {
  const updated = await knex("oauth_codes").where({ code_hash: codeHash }).whereNull("used_at").update({ used_at: now });
  return updated === 1;
}

/** Records the session a code started; answers whether a replay was seen meanwhile. */
export async function attachSession(knex: Knex, codeHash: string, sessionId: string): Promise<{ reused: boolean }> {
  const [row] = await knex("oauth_codes").where({ code_hash: codeHash }).update({ session_id: sessionId }).returning("reused_at");
  return { reused: Boolean((row as { reused_at: Date | null } | undefined)?.reused_at) };
}

/** Flags a replay and answers the session the first exchange started, if it has recorded one yet. */
export async function markReused(knex: Knex, codeHash: string, now: Date): Promise<string | null> {
  const [row] = await knex("oauth_codes")
    .where({ code_hash: codeHash })
    .update({ reused_at: knex.raw("coalesce(reused_at, ?)", [now]) })
    .returning("session_id");
  return (row as { session_id: string | null } | undefined)?.session_id ?? null;
}

/** Codes expired before `cutoff`. A reused code is refused as unknown once purged. */
export async function deleteCodesExpiredBefore(knex: Knex, cutoff: Date): Promise<number> {
  return knex("oauth_codes").where("expires_at", "<", cutoff).delete();
}

export interface ClientListRow {
  id: string;
  name: string;
  redirect_uris: string[];
  created_at: Date;
}

/** Every registered client, oldest first. */
export async function listClients(knex: Knex): Promise<ClientListRow[]> {
  return knex("oauth_clients")
    .select("id", "name", "redirect_uris", "created_at")
    .orderBy([{ column: "created_at", order: "asc" }, { column: "id", order: "asc" }]);
}

/** Deletes the client; its authorization codes go with it (ON DELETE CASCADE). False if unknown. */
export async function deleteClient(knex: Knex, clientId: string): Promise<boolean> {
  return (await knex("oauth_clients").where({ id: clientId }).delete()) > 0;
}

/** The live sessions (grants) users gave the client: `sessions.client_id` has no foreign key to cascade on. */
export async function liveGrantsOf(knex: Knex, clientId: string): Promise<string[]> {
  const rows: { id: string }[] = await knex("sessions").where({ client_id: clientId }).whereNull("revoked_at").select("id");
  return rows.map((row) => row.id);
}
