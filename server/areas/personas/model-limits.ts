import { invalidFields } from "../../toolkit/http/error-catalogue.ts";
import { modelRegistry } from "../../toolkit/models/index.ts";
import type { Services } from "../../toolkit/services.ts";
import type { ModelSettings } from "./store.ts";

/** At most this many model names in a refusal: a registry may list hundreds (GET /v1/models lists them all). */
const NAMES_SHOWN = 20;

/** The model must be one of the registry's (GET /v1/models); the contract cannot know the list. */
export function checkModel(services: Services, model: string | undefined): void {
  const registry = modelRegistry(services.config.llm);
  if (model === undefined || registry.has(model)) return;
  const ids = registry.list().map((entry) => entry.id);
  const shown = ids.length > NAMES_SHOWN ? `${ids.slice(0, NAMES_SHOWN).join(", ")}, … (GET /v1/models lists them all)` : ids.join(", ");
  throw invalidFields(`/body/model must be one of: ${shown}`, [{ path: "/body/model", message: `must be one of: ${shown}` }]);
}

/**
 * Settings over a persona's: the fields `over` sets (an instruction version's, an A/B variant's, a
 * test chat's) replace the persona's, the others stay (docs/adr/0363).
 */
export function settingsOver(base: ModelSettings | undefined, over: ModelSettings | null | undefined): ModelSettings {
  if (!over) return base ?? {};
  const merged: Record<string, unknown> = { ...(base ?? {}) };
  for (const [field, value] of Object.entries(over)) if (value !== undefined) merged[field] = value;
  return merged as ModelSettings;
}
