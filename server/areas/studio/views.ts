import type { components } from "../../../generated/openapi.d.ts";
import type { InstructionVersionRow } from "../personas/index.ts";
import type { VariantWithMetrics } from "./variants.ts";

type InstructionVersion = components["schemas"]["InstructionVersion"];

export function toVersion(row: InstructionVersionRow): InstructionVersion {
  return {
    id: row.id,
    version: row.version,
    status: row.status,
    instructions: row.instructions,
    changelog: row.changelog,
    created_at: row.created_at.toISOString(),
    activated_at: row.activated_at ? row.activated_at.toISOString() : null,
    ...(row.deactivated_at ? { deactivated_at: row.deactivated_at.toISOString() } : {}),
    model_settings: row.model_settings ?? {},
  };
}

export function toVariant(row: VariantWithMetrics): components["schemas"]["Variant"] {
  return {
    id: row.id,
    name: row.name,
    instructions: row.instructions,
    traffic_percentage: row.traffic_percentage,
    metrics: row.metrics,
    created_at: row.created_at.toISOString(),
    ...(row.updated_at ? { updated_at: row.updated_at.toISOString() } : {}),
    model_settings: row.model_settings ?? {},
  };
}
