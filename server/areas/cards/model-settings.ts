import type { components } from "../../../generated/openapi.d.ts";

type ModelSettings = components["schemas"]["PersonaModelSettings"];
type ModelParameter = components["schemas"]["ModelParameter"];

/*
 * A persona's generation settings travel in the service's own card extension
 * (`data.extensions.persona.model_settings`, with `model`): a card exported here imports with them
 * (issue 40, item 3). A card is outside input: each field is taken only when it is within the
 * contract's bounds, the rest left out (as an unknown category is), so a card from another tool
 * never fails on them.
 */

const PARAMETERS = new Set<ModelParameter>(["temperature", "top_p", "presence_penalty", "frequency_penalty", "max_tokens", "stop", "seed", "response_format", "logit_bias", "tools"]);

const within = (value: unknown, min: number, max: number): value is number => typeof value === "number" && Number.isFinite(value) && value >= min && value <= max;

/** The settings a card's own extension carries, each field only when valid; `{}` when none. */
export function settingsOfCard(own: Record<string, unknown>): ModelSettings {
  const raw = own.model_settings;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return {};
  const given = raw as Record<string, unknown>;
  const settings: ModelSettings = {};
  if (within(given.temperature, 0, 2)) settings.temperature = given.temperature;
  if (within(given.top_p, 0, 1)) settings.top_p = given.top_p;
  if (within(given.presence_penalty, -2, 2)) settings.presence_penalty = given.presence_penalty;
  if (within(given.frequency_penalty, -2, 2)) settings.frequency_penalty = given.frequency_penalty;
  if (within(given.max_tokens, 1, 2_147_483_647) && Number.isInteger(given.max_tokens)) settings.max_tokens = given.max_tokens;
  if (within(given.seed, 0, 2_147_483_647) && Number.isInteger(given.seed)) settings.seed = given.seed;
  if (Array.isArray(given.stop) && given.stop.length <= 4 && given.stop.every((stop) => typeof stop === "string" && stop.length >= 1 && stop.length <= 200)) {
    settings.stop = given.stop as string[];
  }
  if (Array.isArray(given.client_may_set) && given.client_may_set.length <= PARAMETERS.size && given.client_may_set.every((name) => PARAMETERS.has(name as ModelParameter))) {
    settings.client_may_set = [...new Set(given.client_may_set as ModelParameter[])];
  }
  return settings;
}

/** The card's model, when it names one as a string (the caller keeps it only when the registry has it). */
export function modelOfCard(own: Record<string, unknown>): string | undefined {
  return typeof own.model === "string" && own.model.length > 0 && own.model.length <= 200 ? own.model : undefined;
}
