/**
 * A model of the registry as the service uses it: where it is reached, what it may read and write,
 * what it costs and what it can do. Built from the models file (file.ts) or from the chat settings
 * (settings.ts); docs/design/models.md describes both.
 */

/**
 * The model family's encoding: `o200k_base` (GPT-4o and later), `cl100k_base` (GPT-4, GPT-3.5), or
 * `approximate` for other families. The service's own usage counts (a stopped reply, a provider
 * that reports none) use the family's encoding; context assembly counts every text once with
 * o200k_base, so a model of another family keeps part of its budget back (`BUDGET_SHARE`,
 * docs/adr/0362).
 */
export type Tokenizer = "o200k_base" | "cl100k_base" | "approximate";

export interface Capabilities {
  streaming: boolean;
  tools: boolean;
  jsonMode: boolean;
  vision: boolean;
}

export interface ModelEntry {
  /** What a persona's `model` names. */
  id: string;
  /** `openai`: any OpenAI-compatible API; `local`: the offline deterministic model. */
  provider: "openai" | "local";
  /** The API's base URL (undefined: api.openai.com); undefined for `local`. */
  baseUrl: string | undefined;
  /** The key sent to it, read from the environment variable the entry names; never logged or answered. */
  apiKey: string | undefined;
  /** The name the upstream knows the model by. */
  upstreamModel: string;
  contextWindow: number;
  maxOutputTokens: number;
  /** USD per million tokens. */
  inputPricePerMillion: number;
  outputPricePerMillion: number;
  capabilities: Capabilities;
  /** Registry ids tried in order when this model fails before its first token. */
  fallbacks: string[];
  tokenizer: Tokenizer;
  /** Where the entry comes from: the models file, or the chat settings (CHAT_MODEL, CHAT_MODELS). */
  source: "file" | "settings";
}

/** The encoding a model name's family uses, for a file entry that names none. */
export function tokenizerOf(upstreamModel: string): Tokenizer {
  const name = upstreamModel.toLowerCase().replace(/^.*\//, "");
  if (/^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|chatgpt-4o|o[1-9])/.test(name)) return "o200k_base";
  if (/^(gpt-4|gpt-3\.5)/.test(name)) return "cl100k_base";
  return "approximate";
}

/**
 * The share of a model's budget the context may fill: all of it when the counts are exact, a
 * little less when they are another family's estimate (docs/adr/0362).
 */
export const BUDGET_SHARE: Record<Tokenizer, number> = { o200k_base: 1, cl100k_base: 0.95, approximate: 0.9 };
