import type { Knex } from "knex";
import { v7 as uuidv7 } from "uuid";
import { notFound } from "../../toolkit/http/error-catalogue.ts";
import { isUuid } from "../../toolkit/http/text.ts";
import type { Services } from "../../toolkit/services.ts";
import {
  deactivateActive,
  findActiveVersion,
  findVersion,
  insertVersion,
  listVersionsOf,
  lockPersonaForVersions,
  markActive,
  nextVersionNumber,
  setPersonaInstructions,
  type InstructionVersionRow,
} from "./versions-store.ts";
import type { ModelSettings } from "./store.ts";

export type { InstructionVersionRow } from "./versions-store.ts";

/*
 * Instruction versions (docs/adr/0104-instruction-versions-the-active-version-is-the-persona-s.md):
 * a persona's instructions are the text of its one active version. Creating a persona makes version
 * 1 active; an instructions change through PUT /v1/personas/:id records and activates the next
 * version; the studio creates drafts and activates any version. The caller has already checked
 * ownership.
 */

/** Records `instructions` as the persona's next version and makes it active, in the caller's transaction. */
export async function recordActiveVersion(trx: Knex.Transaction, personaId: string, instructions: string, now: Date, changelog = ""): Promise<InstructionVersionRow> {
  await lockPersonaForVersions(trx, personaId);
  const version = await nextVersionNumber(trx, personaId);
  await deactivateActive(trx, personaId, now);
  return insertVersion(trx, {
    id: uuidv7(),
    persona_id: personaId,
    version,
    status: "active",
    instructions,
    changelog,
    created_at: now,
    activated_at: now,
    deactivated_at: null,
    // Recorded from a persona's own change: its settings are the persona's already.
    model_settings: {},
  });
}

export async function listVersions(services: Services, personaId: string): Promise<InstructionVersionRow[]> {
  return listVersionsOf(services.db.knex, personaId);
}

export async function activeVersionOf(services: Services, personaId: string): Promise<InstructionVersionRow | undefined> {
  return findActiveVersion(services.db.knex, personaId);
}

/** A version of the persona; an unknown or malformed id is 404. */
export async function requireVersion(services: Services, personaId: string, versionId: string): Promise<InstructionVersionRow> {
  const row = isUuid(versionId) ? await findVersion(services.db.knex, personaId, versionId) : undefined;
  if (!row) throw notFound("Version");
  return row;
}

/** A draft with the persona's next number, numbered under the persona's row lock; `modelSettings` go with it (checked by the caller). */
export async function createDraftVersion(services: Services, personaId: string, instructions: string, changelog: string, modelSettings: ModelSettings = {}): Promise<InstructionVersionRow> {
  const now = services.now();
  return services.db.knex.transaction(async (trx) => {
    if (!(await lockPersonaForVersions(trx, personaId))) throw notFound("Persona");
    const version = await nextVersionNumber(trx, personaId);
    return insertVersion(trx, {
      id: uuidv7(),
      persona_id: personaId,
      version,
      status: "draft",
      instructions,
      changelog,
      created_at: now,
      activated_at: null,
      deactivated_at: null,
      model_settings: modelSettings,
    });
  });
}

/**
 * Makes the version the active one in one transaction: the previous active version becomes
 * inactive with `deactivated_at`, and the persona's `instructions` take the text (and its
 * `model_settings` the fields the version sets), which every conversation's next reply reads.
 * Activating the active version changes nothing.
 */
export async function activateVersion(services: Services, personaId: string, versionId: string): Promise<InstructionVersionRow> {
  if (!isUuid(versionId)) throw notFound("Version");
  const now = services.now();
  return services.db.knex.transaction(async (trx) => {
    if (!(await lockPersonaForVersions(trx, personaId))) throw notFound("Persona");
    const version = await findVersion(trx, personaId, versionId);
    if (!version) throw notFound("Version");
    if (version.status === "active") return version;
    await deactivateActive(trx, personaId, now);
    const active = await markActive(trx, version.id, now);
    await setPersonaInstructions(trx, personaId, active.instructions, now, active.model_settings);
    return active;
  });
}
