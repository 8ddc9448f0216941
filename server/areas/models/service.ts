import { v7 as uuidv7 } from "uuid";
import type { components } from "../../../generated/openapi.d.ts";
import { conflict, invalidField, notFound, providerUnavailable } from "../../toolkit/http/error-catalogue.ts";
import { isUuid } from "../../toolkit/http/text.ts";
import { checkOutboundUrl } from "../../toolkit/providers/address-guard.ts";
import type { ConnectionEndpoint } from "../../toolkit/providers/llm/types.ts";
import type { Services } from "../../toolkit/services.ts";
import { keyBox, keyHint } from "./secrets.ts";
import {
  clearDefault,
  countConnectionsOf,
  deleteConnectionOf,
  findConnectionOf,
  insertConnection,
  listConnectionsOf,
  lockUser,
  replyConnectionOf,
  updateConnectionOf,
  type ConnectionChanges,
  type ConnectionRow,
  type ReplyConnectionRow,
} from "./store.ts";

type ConnectionCreate = components["schemas"]["ProviderConnectionCreate"];
type ConnectionUpdate = components["schemas"]["ProviderConnectionUpdate"];

/** Connections one user may have: a handful of providers is what anyone uses (docs/adr/0364). */
export const MAX_CONNECTIONS_PER_USER = 10;

/** The operator turned the feature off (PROVIDER_CONNECTIONS=false): every operation answers 503. */
function requireEnabled(services: Services): void {
  if (!services.config.connections.enabled) throw providerUnavailable("Provider connections (bring your own key) are turned off on this server");
}

const badUrl = (message: string) => invalidField("/body/base_url", message);

/**
 * The registration check of a connection's base URL: HTTPS, and a host whose every address is
 * public, unless the operator allows private addresses (then `http://` too). Every connection to
 * it is checked again when a reply runs (providers/llm/guarded-fetch.ts).
 */
async function checkBaseUrl(services: Services, raw: string): Promise<string> {
  await checkOutboundUrl(raw, services.config.connections.allowPrivateUrls, badUrl, (url) => {
    if (url.username || url.password) throw badUrl("must not carry a user name or password: give the key as api_key");
    if (url.search || url.hash) throw badUrl("must have no query or fragment");
  });
  return raw.replace(/(?<!\/)\/+$/, "");
}

/** The caller's connection; another user's, an unknown id or a malformed one are all 404. */
export async function requireOwnConnection(services: Services, userId: string, id: string): Promise<ConnectionRow> {
  requireEnabled(services);
  const row = isUuid(id) ? await findConnectionOf(services.db.knex, userId, id) : undefined;
  if (!row) throw notFound("Provider connection");
  return row;
}

export async function listConnections(services: Services, userId: string): Promise<ConnectionRow[]> {
  requireEnabled(services);
  return listConnectionsOf(services.db.knex, userId);
}

/** Registers a connection; its key is sealed before it reaches the database and never answered. */
export async function createConnection(services: Services, userId: string, input: ConnectionCreate): Promise<ConnectionRow> {
  requireEnabled(services);
  const baseUrl = await checkBaseUrl(services, input.base_url);
  const sealed = input.api_key === undefined ? null : (await keyBox(services.db.knex, services.config.secretsKey)).seal(input.api_key);
  const now = services.now();
  return services.db.knex.transaction(async (trx) => {
    await lockUser(trx, userId);
    if ((await countConnectionsOf(trx, userId)) >= MAX_CONNECTIONS_PER_USER) {
      throw conflict(`An account may have at most ${MAX_CONNECTIONS_PER_USER} provider connections; delete one first`);
    }
    if (input.is_default) await clearDefault(trx, userId);
    return insertConnection(trx, {
      id: uuidv7(),
      user_id: userId,
      name: input.name,
      base_url: baseUrl,
      api_key_encrypted: sealed,
      key_hint: input.api_key === undefined ? null : keyHint(input.api_key),
      model: input.model ?? null,
      context_window: input.context_window ?? null,
      is_default: input.is_default ?? false,
      created_at: now,
      updated_at: now,
    });
  });
}

/** Changes only the supplied fields; a new key replaces the old one (null removes it). */
export async function updateConnection(services: Services, userId: string, id: string, input: ConnectionUpdate): Promise<ConnectionRow> {
  const current = await requireOwnConnection(services, userId, id);
  const changes: ConnectionChanges = {};
  if (input.name !== undefined) changes.name = input.name;
  if (input.base_url !== undefined) changes.base_url = await checkBaseUrl(services, input.base_url);
  if (input.api_key !== undefined) {
    changes.api_key_encrypted = input.api_key === null ? null : (await keyBox(services.db.knex, services.config.secretsKey)).seal(input.api_key);
    changes.key_hint = input.api_key === null ? null : keyHint(input.api_key);
  }
  if (input.model !== undefined) changes.model = input.model;
  if (input.context_window !== undefined) changes.context_window = input.context_window;
  if (input.is_default !== undefined) changes.is_default = input.is_default;
  if (Object.keys(changes).length === 0) return current;
  const row = await services.db.knex.transaction(async (trx) => {
    await lockUser(trx, userId);
    if (changes.is_default) await clearDefault(trx, userId, current.id);
    return updateConnectionOf(trx, userId, current.id, { ...changes, updated_at: services.now() });
  });
  if (!row) throw notFound("Provider connection");
  return row;
}

export async function deleteConnection(services: Services, userId: string, id: string): Promise<string> {
  const current = await requireOwnConnection(services, userId, id);
  if (!(await deleteConnectionOf(services.db.knex, userId, current.id))) throw notFound("Provider connection");
  return current.id;
}

/**
 * Checks that `id` is one of the user's connections, for a persona that names it: 400 on
 * `path` otherwise (and while the feature is off). Null is always accepted: it names none.
 */
export async function checkPersonaConnection(services: Services, userId: string, id: string | null | undefined, path = "/body/provider_connection_id"): Promise<void> {
  if (id === undefined || id === null) return;
  if (!services.config.connections.enabled) throw invalidField(path, "cannot be set: provider connections are turned off on this server");
  if (!(await findConnectionOf(services.db.knex, userId, id))) throw invalidField(path, "is not one of your provider connections");
}

/** The bindings of `REPLY_CONNECTION_CTES` for a reply of `userId`: whether connections are on, whose, and whether one exempts the reply from the quota. */
export function replyConnectionBindings(services: Services, userId: string): [boolean, string, boolean] {
  const { enabled, countAgainstQuota } = services.config.connections;
  return [enabled, userId, !countAgainstQuota];
}

/** What a reply needs to run on a connection: its endpoint with the key opened, and the context window it names. */
export type ReplyConnection = ConnectionEndpoint & { contextWindow: number | undefined };

/** A connection row a chat statement read, ready for the model call (its key opened). */
export async function openConnection(services: Services, row: ReplyConnectionRow): Promise<ReplyConnection> {
  const key = row.api_key_encrypted === null ? undefined : (await keyBox(services.db.knex, services.config.secretsKey)).open(row.api_key_encrypted);
  return {
    id: row.id,
    name: row.name,
    baseUrl: row.base_url,
    apiKey: key,
    model: row.model ?? undefined,
    version: new Date(row.updated_at).toISOString(),
    contextWindow: row.context_window ?? undefined,
  };
}

/** The connection a reply of `userId` with a persona naming `personaConnectionId` runs on, read on its own (studio test chat); undefined: the registry's model. */
export async function replyConnectionFor(services: Services, userId: string, personaConnectionId: string | null): Promise<ReplyConnection | undefined> {
  if (!services.config.connections.enabled) return undefined;
  const row = await replyConnectionOf(services.db.knex, userId, personaConnectionId);
  return row ? openConnection(services, row) : undefined;
}
