import type { components } from "../../../../generated/openapi.d.ts";
import type { IssuedTokens } from "../sessions/service.ts";
import { loginBody } from "../sessions/views.ts";
import type { UserRow } from "../users/store.ts";
import { toUser } from "../users/views.ts";
import type { DataExportArchive } from "./export-archive.ts";
import type { DataExportRow } from "./store.ts";

type Schemas = components["schemas"];

export function registeredBody(user: UserRow, tokens: IssuedTokens): Schemas["RegisterResponse"] {
  return { user: toUser(user), ...tokens };
}

export function deletedBody(deletedAt: Date, purgeAt: Date): Schemas["AccountDeletion"] {
  const day = purgeAt.toISOString().slice(0, 10);
  return {
    message: `Account scheduled for deletion on ${day}. Until then, POST /v1/auth/me/restore with your e-mail and password undoes it.`,
    deleted_at: deletedAt.toISOString(),
    grace_period_ends: purgeAt.toISOString(),
  };
}

/** A restore's answer: a login of the account, and what came back besides. */
export function restoredBody(user: UserRow, tokens: IssuedTokens, apiKeys: number): Schemas["AccountRestored"] {
  return { message: "Account restored.", ...loginBody(tokens, user), restored: { api_keys: apiKeys } };
}

export function exportStartedBody(row: DataExportRow): Schemas["DataExport"] {
  return {
    message: "Export started. A download link will be e-mailed within 24 hours.",
    export_id: row.id,
    status: "processing",
    requested_at: row.requested_at.toISOString(),
  };
}

/** The archive as a download: a dated file name, never cached. */
export function archiveHeaders(archive: DataExportArchive): Record<string, string> {
  const day = archive.exported_at.slice(0, 10);
  return { "content-disposition": `attachment; filename="persona-export-${day}.json"`, "cache-control": "no-store" };
}

export const FORGOT_MESSAGE = "If the address is registered, a reset link is on its way.";
