import type { Knex } from "knex";
import type { components } from "../../../../generated/openapi.d.ts";
import type { AccountDataSection } from "../../../toolkit/account-data.ts";
import { personaIdsOfCreator } from "../../personas/index.ts";
import type { Services } from "../../../toolkit/services.ts";
import type { UserRow } from "../users/store.ts";
import { toUser } from "../users/views.ts";

export type DataExportArchive = components["schemas"]["DataExportArchive"];

/**
 * Everything the user owns, as one JSON document (the contract's DataExportArchive): one key per
 * exporting section, in registry order. `knex` may be a transaction, for one consistent snapshot.
 */
export async function buildArchive(
  services: Services,
  sections: readonly AccountDataSection[],
  user: UserRow,
  knex: Knex = services.db.knex,
): Promise<DataExportArchive> {
  const personaIds = await personaIdsOfCreator(knex, user.id);
  const context = { services, knex, userId: user.id, personaIds };
  const parts: Record<string, unknown> = {};
  for (const section of sections) {
    if (section.exportRows) parts[section.key] = await section.exportRows(context);
  }
  const archive = { format_version: 1, exported_at: services.now().toISOString(), user: toUser(user), ...parts };
  // Timestamps to ISO strings, as on the wire everywhere else.
  return JSON.parse(JSON.stringify(archive)) as DataExportArchive;
}
