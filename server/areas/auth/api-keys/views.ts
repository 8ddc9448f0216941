import type { components } from "../../../../generated/openapi.d.ts";
import type { ApiKeyRow } from "./store.ts";

type ApiKey = components["schemas"]["ApiKey"];

const iso = (date: Date | null) => (date ? date.toISOString() : null);

export function toApiKey(row: ApiKeyRow): ApiKey {
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
export function createdKey<Scope extends string>(row: ApiKeyRow, key: string) {
  const { key_hint: _hint, last_used_at: _used, ...fields } = toApiKey(row);
  return { ...fields, key, scopes: row.scopes as Scope[] };
}

export function revokedKey(row: ApiKeyRow & { revoked_at: Date }) {
  return { message: "API key revoked.", id: row.id, revoked_at: row.revoked_at.toISOString() };
}
