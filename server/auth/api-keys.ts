import { v7 as uuidv7 } from "uuid";
import type { components } from "../../generated/openapi.d.ts";
import { principalOf } from "../http/authenticate.ts";
import { ApiError } from "../http/errors.ts";
import type { Handler } from "../http/router.ts";
import type { Services } from "../services.ts";
import { insertApiKey, listLiveApiKeys, revokeLiveApiKey, type StoredApiKey } from "./api-key-store.ts";
import { newApiKey, sha256 } from "./tokens.ts";
import { isUuid } from "../http/text.ts";

type ApiKey = components["schemas"]["ApiKey"];

const DAY_MS = 24 * 60 * 60 * 1000;
export const NAME_MAX = 100;
export const EXPIRES_IN_DAYS_MAX = 3650;

// The two creation forms and their scope vocabularies (interface spec, Authentication). Keys of
// either form are listed, used and revoked the same way; principal.ts maps both onto operations.
const FINE_SCOPES: ReadonlySet<string> = new Set(["personas:read", "personas:write", "conversations:read", "conversations:write", "voice", "admin"]);
const SIMPLE_SCOPES: ReadonlySet<string> = new Set(["read", "chat", "admin"]);

interface NewKeyInput {
  name: string;
  scopes: string[];
  expires_in_days?: number;
}

/**
 * The contract validator already enforces these limits; they are checked again here so that the
 * rules hold for any caller of `createApiKey` and nothing is written for a bad request.
 */
function checkInput(input: NewKeyInput, vocabulary: ReadonlySet<string>): void {
  const errors: { path: string; message: string }[] = [];
  const nameLength = typeof input.name === "string" ? [...input.name].length : 0;
  if (nameLength < 1 || nameLength > NAME_MAX) errors.push({ path: "/body/name", message: `must be 1 to ${NAME_MAX} characters` });
  if (!Array.isArray(input.scopes) || input.scopes.length === 0) {
    errors.push({ path: "/body/scopes", message: "must name at least one scope" });
  } else {
    input.scopes.forEach((scope, i) => {
      if (!vocabulary.has(scope)) errors.push({ path: `/body/scopes/${i}`, message: `must be one of: ${[...vocabulary].join(", ")}` });
    });
    if (new Set(input.scopes).size !== input.scopes.length) errors.push({ path: "/body/scopes", message: "must not repeat a scope" });
  }
  const days = input.expires_in_days;
  if (days !== undefined && (!Number.isInteger(days) || days < 1 || days > EXPIRES_IN_DAYS_MAX)) {
    errors.push({ path: "/body/expires_in_days", message: `must be a whole number from 1 to ${EXPIRES_IN_DAYS_MAX}` });
  }
  if (errors.length > 0) {
    throw new ApiError(400, "invalid_request", errors.map((e) => `${e.path} ${e.message}`).join("; "), { errors });
  }
}

/** Creates a key for the user; the full key is returned here and nowhere else (only its hash is kept). */
async function createApiKey(services: Services, userId: string, input: NewKeyInput, vocabulary: ReadonlySet<string>): Promise<{ row: StoredApiKey; key: string }> {
  checkInput(input, vocabulary);
  const now = services.now();
  const { key, hint } = newApiKey();
  const row = await insertApiKey(services.db.knex, {
    id: uuidv7(),
    user_id: userId,
    name: input.name,
    key_hash: sha256(key),
    key_hint: hint,
    scopes: input.scopes,
    created_at: now,
    expires_at: input.expires_in_days === undefined ? null : new Date(now.getTime() + input.expires_in_days * DAY_MS),
  });
  return { row, key };
}

const iso = (date: Date | null) => (date ? date.toISOString() : null);

function toApiKey(row: StoredApiKey): ApiKey {
  return {
    id: row.id,
    name: row.name,
    key_hint: row.key_hint,
    scopes: row.scopes,
    created_at: row.created_at.toISOString(),
    last_used_at: iso(row.last_used_at),
    expires_at: iso(row.expires_at),
  };
}

/** The creation answer, the one time the full key is shown; the two forms differ only in vocabulary. */
function created<Scope extends string>(row: StoredApiKey, key: string) {
  const { key_hint: _hint, last_used_at: _used, ...fields } = toApiKey(row);
  return { ...fields, key, scopes: row.scopes as Scope[] };
}

export const api_keys_create: Handler<"api_keys_create"> = async ({ services, req, body }) => {
  const { row, key } = await createApiKey(services, principalOf(req).userId, body, FINE_SCOPES);
  return { status: 201, body: { ...created<components["schemas"]["ApiKeyScope"]>(row, key), last_used_at: null } };
};

export const api_keys_create_simple: Handler<"api_keys_create_simple"> = async ({ services, req, body }) => {
  const { row, key } = await createApiKey(services, principalOf(req).userId, body, SIMPLE_SCOPES);
  return { status: 201, body: created<components["schemas"]["SimpleApiKeyScope"]>(row, key) };
};

/** Live keys only: revoked and expired keys no longer exist for their owner. */
export const api_keys_list: Handler<"api_keys_list"> = async ({ services, req }) => {
  const rows = await listLiveApiKeys(services.db.knex, principalOf(req).userId, services.now());
  return { status: 200, body: { data: rows.map(toApiKey) } };
};

/** Another user's key, an unknown id and an already revoked or expired key are all 404. */
export const api_keys_revoke: Handler<"api_keys_revoke"> = async ({ services, req, params }) => {
  const userId = principalOf(req).userId;
  const id = params.id;
  const row = isUuid(id) ? await revokeLiveApiKey(services.db.knex, userId, id, services.now()) : undefined;
  if (!row?.revoked_at) throw new ApiError(404, "not_found", "API key not found");
  return { status: 200, body: { message: "API key revoked.", id: row.id, revoked_at: row.revoked_at.toISOString() } };
};
