import type { Services } from "../../../toolkit/services.ts";
import { revokeSession } from "../sessions/service.ts";
import { deleteClient, listClients, liveGrantsOf } from "./store.ts";

// Operator actions on OAuth client applications (`persona oauth-clients`): the contract has no
// endpoint for them. Registration is registerOAuthClient in clients.ts.

export interface OAuthClientSummary {
  client_id: string;
  name: string;
  redirect_uris: string[];
  created_at: string;
}

export async function listOAuthClients(services: Services): Promise<OAuthClientSummary[]> {
  return (await listClients(services.db.knex)).map((row) => ({
    client_id: row.id,
    name: row.name,
    redirect_uris: row.redirect_uris,
    created_at: new Date(row.created_at).toISOString(),
  }));
}

/**
 * Removes the client; false if unknown. Its pending codes go with it, and every grant users gave it
 * is revoked as a user's own revocation would be: its tokens and the API keys minted through it
 * stop working, announced to every process's credential cache. The client is deleted first, so no
 * new grant can start while the old ones are revoked.
 */
export async function removeOAuthClient(services: Services, clientId: string): Promise<boolean> {
  if (!(await deleteClient(services.db.knex, clientId))) return false;
  for (const sessionId of await liveGrantsOf(services.db.knex, clientId)) await revokeSession(services, sessionId);
  return true;
}
