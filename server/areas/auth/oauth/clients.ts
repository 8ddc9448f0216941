import type { Knex } from "knex";
import type { Services } from "../../../toolkit/services.ts";
import { invalidFields, invalidRequest, unauthorized } from "../../../toolkit/http/error-catalogue.ts";
import { constantTimeEqual, randomToken, sha256 } from "../../../toolkit/tokens.ts";
import { findClient, insertClient, type OAuthClientRow } from "./store.ts";

export interface RegisteredClient {
  client_id: string;
  client_secret: string;
}

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

function knexOf(target: Services | Knex): Knex {
  return typeof target === "function" ? target : target.db.knex;
}

/**
 * A redirect URI a client may register: absolute, no fragment (RFC 6749 3.1.2), HTTPS except on
 * loopback (native and development apps). Compared later as an exact string.
 */
function checkRedirectUri(uri: string): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return "is not an absolute URL";
  }
  if (uri.length > 2048) return "is longer than 2048 characters";
  if (url.hash || uri.includes("#")) return "must not have a fragment";
  if (url.username || url.password) return "must not carry credentials";
  if (url.protocol === "https:") return undefined;
  if (url.protocol === "http:" && LOOPBACK.has(url.hostname)) return undefined;
  return "must be https (http only on loopback)";
}

/**
 * Registers a third-party application (the admin CLI calls this; the contract has no endpoint).
 * The secret is returned once and stored only as its SHA-256.
 */
export async function registerOAuthClient(
  target: Services | Knex,
  input: { name: string; redirectUris: string[] },
  now: Date = new Date(),
): Promise<RegisteredClient> {
  const name = input.name.trim();
  const errors: { path: string; message: string }[] = [];
  if (!name || name.length > 100) errors.push({ path: "name", message: "must be 1 to 100 characters" });
  if (!input.redirectUris.length) errors.push({ path: "redirectUris", message: "needs at least one URI" });
  input.redirectUris.forEach((uri, i) => {
    const problem = checkRedirectUri(uri);
    if (problem) errors.push({ path: `redirectUris.${i}`, message: problem });
  });
  if (errors.length) throw invalidFields("The OAuth client is not valid", errors);

  const client_id = `oc_${randomToken(16)}`;
  const client_secret = `cs_${randomToken(32)}`;
  await insertClient(knexOf(target), {
    id: client_id,
    name,
    secret_hash: sha256(client_secret),
    redirect_uris: [...new Set(input.redirectUris)],
    created_at: now,
  });
  return { client_id, client_secret };
}

/**
 * The client, when `redirectUri` is one of its registered URIs exactly. Anything else is a JSON
 * 400, never a redirect: an unverified URI must not receive the user (RFC 6749 4.1.2.1).
 */
export async function clientForRedirect(services: Services, clientId: string, redirectUri: string): Promise<OAuthClientRow> {
  const client = await findClient(services.db.knex, clientId);
  if (!client) throw invalidRequest("Unknown client_id");
  if (!client.redirect_uris.includes(redirectUri)) {
    throw invalidRequest("redirect_uri is not registered for this client");
  }
  return client;
}

// Compared against when the client does not exist, so that an unknown id costs the same time.
const DECOY_HASH = sha256("no-such-client");

/** The client whose id and secret match; 401 for any mismatch, the same for unknown ids. */
export async function authenticateClient(services: Services, clientId: string, clientSecret: string): Promise<OAuthClientRow> {
  const client = await findClient(services.db.knex, clientId);
  const matches = constantTimeEqual(sha256(clientSecret), client?.secret_hash ?? DECOY_HASH);
  if (!client || !matches) throw unauthorized("Client authentication failed");
  return client;
}
