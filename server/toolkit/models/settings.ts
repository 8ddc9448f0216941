import type { Config } from "../config.ts";
import type { ModelEntry } from "./entries.ts";

/**
 * The registry of a server without a models file (docs/adr/0361): every model of `CHAT_MODELS`
 * (`CHAT_MODEL` first) on the one chat API of `OPENAI_BASE_URL` and `OPENAI_API_KEY` (or the offline
 * model), each with `CHAT_CONTEXT_TOKENS` as its window and `CHAT_MAX_OUTPUT_TOKENS` as its most
 * output, as the service ran before it had a registry. Prices are unknown: their replies cost 0.
 */
export function entriesFromSettings(llm: Config["llm"]): { entries: ModelEntry[]; defaultId: string } {
  const local = llm.provider === "local";
  const entries = llm.models.map(
    (id): ModelEntry => ({
      id,
      provider: local ? "local" : "openai",
      baseUrl: local ? undefined : llm.baseUrl,
      apiKey: local ? undefined : llm.apiKey,
      upstreamModel: id,
      contextWindow: llm.contextTokens,
      maxOutputTokens: llm.maxOutputTokens,
      inputPricePerMillion: 0,
      outputPricePerMillion: 0,
      // What the one upstream can do is not known: every option reaches it, and it answers for
      // itself, as before the registry; the offline model calls no tools.
      capabilities: { streaming: true, tools: !local, jsonMode: true, vision: !local },
      fallbacks: [],
      // Counted as the service always counted: o200k_base, an estimate for other families.
      tokenizer: "o200k_base",
      source: "settings",
    }),
  );
  return { entries, defaultId: llm.model };
}
