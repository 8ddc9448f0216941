import type { Knex } from "knex";

/**
 * Listing and removing OAuth clients: only the admin CLI does either, so these queries live next
 * to it rather than in server/areas/auth/oauth/store.ts (which has insert and lookup for the flow).
 */
export interface OAuthClientSummary {
  client_id: string;
  name: string;
  redirect_uris: string[];
  created_at: string;
}

export async function listOAuthClients(knex: Knex): Promise<OAuthClientSummary[]> {
  const rows: { id: string; name: string; redirect_uris: string[]; created_at: Date }[] = await knex("oauth_clients")
    .select("id", "name", "redirect_uris", "created_at")
    .orderBy([{ column: "created_at", order: "asc" }, { column: "id", order: "asc" }]);
  return rows.map((row) => ({
    client_id: row.id,
    name: row.name,
    redirect_uris: row.redirect_uris,
    created_at: new Date(row.created_at).toISOString(),
  }));
}

/** Deletes the client; its authorization codes go with it (ON DELETE CASCADE). False if unknown. */
export async function removeOAuthClient(knex: Knex, clientId: string): Promise<boolean> {
  const deleted = await knex("oauth_clients").where({ id: clientId }).delete();
  return deleted > 0;
}
