// The model registry (issue 40): the models personas may use, from the models file or the chat
// settings, kept in memory for the life of the process (docs/design/models.md).
import type { Config } from "../config.ts";
import { entriesFromFile } from "./file.ts";
import { ModelRegistry } from "./registry.ts";
import { entriesFromSettings } from "./settings.ts";

export { costNanos, usdOf } from "./cost.ts";
export type { Capabilities, ModelEntry, Tokenizer } from "./entries.ts";
export { ModelRegistry, type ModelBudget } from "./registry.ts";

const registries = new WeakMap<Config["llm"], ModelRegistry>();

/**
 * The registry of these chat settings, built once per settings object: from the models file
 * (MODELS_FILE) when there is one, checked entry by entry (a `ConfigError` naming each bad entry),
 * else the one-model registry of CHAT_MODEL and CHAT_MODELS. The chat provider builds it at start
 * (providers/llm/index.ts), so a bad file stops the start.
 */
export function modelRegistry(llm: Config["llm"]): ModelRegistry {
  let registry = registries.get(llm);
  if (!registry) {
    const { entries, defaultId } = llm.modelsSource
      ? entriesFromFile(llm.modelsSource, { baseUrl: llm.baseUrl, apiKey: llm.apiKey, chosenDefault: llm.modelChosen })
      : entriesFromSettings(llm);
    registry = new ModelRegistry(entries, defaultId, { contextTokens: llm.contextTokensCap, maxOutputTokens: llm.maxOutputTokensCap });
    registries.set(llm, registry);
  }
  return registry;
}

