import type { Knex } from "knex";
import type { ModelSettings } from "./store.ts";

export interface InstructionVersionRow {
  id: string;
  persona_id: string;
  version: number;
  status: "draft" | "active" | "inactive";
  instructions: string;
  changelog: string;
  created_at: Date;
  activated_at: Date | null;
  deactivated_at: Date | null;
  /** Generation settings that go with these instructions (issue 40): set over the persona's when it is activated; `{}` sets none. */
  model_settings: ModelSettings;
}

export async function listVersionsOf(knex: Knex, personaId: string): Promise<InstructionVersionRow[]> {
  return knex("instruction_versions").where({ persona_id: personaId }).orderBy("version", "desc");
}

export async function findVersion(knex: Knex, personaId: string, id: string): Promise<InstructionVersionRow | undefined> {
  return knex("instruction_versions").where({ persona_id: personaId, id }).first();
}

export async function findActiveVersion(knex: Knex, personaId: string): Promise<InstructionVersionRow | undefined> {
  return knex("instruction_versions").where({ persona_id: personaId, status: "active" }).first();
}

/**
 * Takes the persona's row lock for the rest of the transaction: version numbering and activation
 * of one persona run one at a time, so numbers have no gaps or duplicates. False when it is gone.
 */
export async function lockPersonaForVersions(trx: Knex.Transaction, personaId: string): Promise<boolean> {
  const row = await trx("personas").where({ id: personaId }).forUpdate().first("id");
  return row !== undefined;
}

/** The next number of the persona's versions; call with the persona locked. */
export async function nextVersionNumber(trx: Knex.Transaction, personaId: string): Promise<number> {
  const row = await trx("instruction_versions").where({ persona_id: personaId }).max<{ max: number | null }>({ max: "version" }).first();
  return Number(row?.max ?? 0) + 1;
}

export async function insertVersion(trx: Knex.Transaction, row: InstructionVersionRow): Promise<InstructionVersionRow> {
  const [inserted] = await trx("instruction_versions").insert({ ...row, model_settings: JSON.stringify(row.model_settings) }).returning("*");
  return inserted as InstructionVersionRow;
}

/** Retires the persona's active version, if any; call with the persona locked. */
export async function deactivateActive(trx: Knex.Transaction, personaId: string, now: Date): Promise<void> {
  await trx("instruction_versions").where({ persona_id: personaId, status: "active" }).update({ status: "inactive", deactivated_at: now });
}

export async function markActive(trx: Knex.Transaction, id: string, now: Date): Promise<InstructionVersionRow> {
  const [row] = await trx("instruction_versions").where({ id }).update({ status: "active", activated_at: now, deactivated_at: null }).returning("*");
  return row as InstructionVersionRow;
}

/**
 * The persona's live instructions follow the active version, and so do the settings it sets: each
 * field of the version's replaces the persona's (jsonb `||`), the others stay; `updated_at`
 * records the change.
 */
export async function setPersonaInstructions(trx: Knex.Transaction, personaId: string, instructions: string, now: Date, settings: ModelSettings = {}): Promise<void> {
  const changes: Record<string, unknown> = { instructions, updated_at: now };
  if (Object.keys(settings).length > 0) changes.model_settings = trx.raw("model_settings || ?::jsonb", [JSON.stringify(settings)]);
  await trx("personas").where({ id: personaId }).update(changes);
}
