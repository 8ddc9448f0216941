import type { components } from "../../../generated/openapi.d.ts";
import type { ModelOptions } from "../../toolkit/providers/llm/types.ts";

type PersonaModelSettings = components["schemas"]["PersonaModelSettings"];

/** A persona's sampling defaults as model options: the ones its owner set, nothing else. */
export function settingsOptions(settings: PersonaModelSettings | undefined): ModelOptions {
  const options: ModelOptions = {};
  if (!settings) return options;
  if (settings.temperature != null) options.temperature = settings.temperature;
  if (settings.top_p != null) options.topP = settings.top_p;
  if (settings.presence_penalty != null) options.presencePenalty = settings.presence_penalty;
  if (settings.frequency_penalty != null) options.frequencyPenalty = settings.frequency_penalty;
  if (settings.stop != null) options.stop = settings.stop;
  if (settings.seed != null) options.seed = settings.seed;
  return options;
}
