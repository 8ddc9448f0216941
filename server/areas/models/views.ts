import type { components } from "../../../generated/openapi.d.ts";
import type { ModelEntry, ModelRegistry } from "../../toolkit/models/index.ts";
import type { ConnectionRow } from "./store.ts";

type Schemas = components["schemas"];

/** A connection without its key: the hint of its last characters only. */
export function toConnection(row: ConnectionRow): Schemas["ProviderConnection"] {
  return {
    id: row.id,
    name: row.name,
    base_url: row.base_url,
    key_hint: row.key_hint,
    model: row.model,
    context_window: row.context_window,
    is_default: row.is_default,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** A registry model as a caller sees it: its limits as the server applies them, never where it is reached or with which key. */
export function toModelInfo(registry: ModelRegistry, entry: ModelEntry): Schemas["ModelInfo"] {
  const limits = registry.limits(entry);
  return {
    id: entry.id,
    default: entry.id === registry.defaultId,
    context_window: limits.contextTokens,
    max_output_tokens: limits.maxOutputTokens,
    input_price_per_million: entry.inputPricePerMillion,
    output_price_per_million: entry.outputPricePerMillion,
    capabilities: { streaming: entry.capabilities.streaming, tools: entry.capabilities.tools, json_mode: entry.capabilities.jsonMode, vision: entry.capabilities.vision },
    tokenizer: entry.tokenizer,
    fallbacks: entry.fallbacks,
  };
}
