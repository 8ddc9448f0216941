import type { Knex } from "knex";

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
