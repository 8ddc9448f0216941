import { z } from "zod";
import { ConfigError, OPENAI_DEFAULT_BASE_URL, type ModelsSource } from "../config.ts";
import { tokenizerOf, type ModelEntry } from "./entries.ts";

/*
 * The models file (MODELS_FILE), JSON or YAML (docs/adr/0360):
 *
 *   default: gpt-4o-mini
 *   models:
 *     - id: gpt-4o-mini
 *       base_url: https://api.openai.com/v1
 *       api_key_env: OPENAI_API_KEY
 *       context_window: 128000
 *       max_output_tokens: 4096
 *       input_price_per_million: 0.15
 *       output_price_per_million: 0.6
 *       capabilities: { tools: true, json_mode: true, vision: true }
 *       fallbacks: [llama-3.1-8b]
 *
 * Every field is checked at start, unknown ones included (a typo is an error, not a silent
 * default); the error names the entry and the field.
 */

const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const price = z.number().min(0, "must be 0 or more").max(100_000, "must be at most 100000 (USD per million tokens)").default(0);

const capabilities = z
  .strictObject({
    streaming: z.boolean().optional(),
    tools: z.boolean().optional(),
    json_mode: z.boolean().optional(),
    vision: z.boolean().optional(),
  })
  .default({});

const entrySchema = z.strictObject({
  id: z.string().regex(MODEL_ID, "must be 1 to 200 letters, digits or . _ : / @ + -, starting with a letter or digit"),
  provider: z.enum(["openai", "local"]).default("openai"),
  base_url: z.url({ protocol: /^https?$/, error: "must be an http:// or https:// URL" }).optional(),
  api_key_env: z.string().regex(ENV_NAME, "must be the name of an environment variable").optional(),
  upstream_model: z.string().min(1).max(200).optional(),
  context_window: z.number().int("must be a whole number").min(512, "must be at least 512").max(10_000_000, "must be at most 10000000"),
  max_output_tokens: z.number().int("must be a whole number").min(16, "must be at least 16").max(1_000_000, "must be at most 1000000"),
  input_price_per_million: price,
  output_price_per_million: price,
  capabilities,
  fallbacks: z.array(z.string()).max(5, "may name at most 5 models").default([]),
  tokenizer: z.enum(["o200k_base", "cl100k_base", "approximate"]).optional(),
});

const fileSchema = z.strictObject({
  default: z.string().optional(),
  models: z.array(z.unknown()).min(1, "must list at least one model").max(500, "may list at most 500 models"),
});

type Entry = z.output<typeof entrySchema>;

/** What the settings contribute to a file entry: the chat API a `base_url`-less entry reaches, and its key. */
interface ChatSettings {
  baseUrl: string | undefined;
  apiKey: string | undefined;
  /** CHAT_MODEL, which chooses the default among the file's models when set. */
  chosenDefault: string | undefined;
}

/** The registry's entries and default model from the models file; a `ConfigError` naming every bad entry and field otherwise. */
export function entriesFromFile(source: ModelsSource, settings: ChatSettings): { entries: ModelEntry[]; defaultId: string } {
  const problems: string[] = [];
  const file = fileSchema.safeParse(source.document);
  if (!file.success) throw invalid(source, file.error.issues.map((issue) => `${pathOf(issue.path) || "the file"}: ${issue.message}`));
  const parsed: (Entry | undefined)[] = file.data.models.map((raw, index) => {
    const result = entrySchema.safeParse(raw);
    if (result.success) return result.data;
    const label = entryLabel(index, raw);
    for (const issue of result.error.issues) problems.push(`${label}${issue.path.length ? `: ${pathOf(issue.path)}` : ""}: ${issue.message}`);
    return undefined;
  });
  const ids = new Map<string, number>();
  parsed.forEach((entry, index) => {
    if (!entry) return;
    if (ids.has(entry.id)) problems.push(`${entryLabel(index, entry)}: id: is also models[${ids.get(entry.id)}]'s`);
    else ids.set(entry.id, index);
  });
  parsed.forEach((entry, index) => {
    if (entry) problems.push(...entryProblems(entry, ids, source).map((problem) => `${entryLabel(index, entry)}: ${problem}`));
  });
  const defaultId = settings.chosenDefault ?? file.data.default ?? (parsed[0]?.id as string | undefined);
  if (file.data.default !== undefined && !ids.has(file.data.default)) problems.push(`default: ${JSON.stringify(file.data.default)} is none of the models' ids`);
  if (settings.chosenDefault !== undefined && !ids.has(settings.chosenDefault)) problems.push(`CHAT_MODEL=${JSON.stringify(settings.chosenDefault)} is none of the models' ids`);
  if (problems.length > 0) throw invalid(source, problems);
  const entries = (parsed as Entry[]).map((entry) => toEntry(entry, source, settings));
  return { entries, defaultId: defaultId! };
}

/** What cannot be seen in one field alone: the output against the window, the key's variable, the fallbacks. */
function entryProblems(entry: Entry, ids: Map<string, number>, source: ModelsSource): string[] {
  const problems: string[] = [];
  if (entry.max_output_tokens >= entry.context_window) problems.push(`max_output_tokens: must be less than context_window (${entry.context_window}), or nothing is left for the context`);
  if (entry.provider === "local") {
    if (entry.base_url !== undefined) problems.push("base_url: the local model is reached through no URL");
    if (entry.api_key_env !== undefined) problems.push("api_key_env: the local model takes no key");
    if (entry.capabilities.tools) problems.push("capabilities.tools: the local model cannot call tools");
    if (entry.capabilities.vision) problems.push("capabilities.vision: the local model reads no images");
  }
  if (entry.api_key_env !== undefined && source.keys[entry.api_key_env] === undefined) {
    problems.push(`api_key_env: the environment variable ${entry.api_key_env} is not set`);
  }
  entry.fallbacks.forEach((fallback, index) => {
    if (fallback === entry.id) problems.push(`fallbacks[${index}]: a model cannot be its own fallback`);
    else if (!ids.has(fallback)) problems.push(`fallbacks[${index}]: ${JSON.stringify(fallback)} is none of the models' ids`);
  });
  if (new Set(entry.fallbacks).size < entry.fallbacks.length) problems.push("fallbacks: names a model twice");
  return problems;
}

function toEntry(entry: Entry, source: ModelsSource, settings: ChatSettings): ModelEntry {
  const local = entry.provider === "local";
  const baseUrl = local ? undefined : (entry.base_url ?? settings.baseUrl);
  const upstreamModel = entry.upstream_model ?? entry.id;
  return {
    id: entry.id,
    provider: entry.provider,
    baseUrl,
    // A named variable's key; else OPENAI_API_KEY, but only to the server OPENAI_BASE_URL names (a
    // key is never sent to another server).
    apiKey: local ? undefined : entry.api_key_env !== undefined ? source.keys[entry.api_key_env] : sameServer(baseUrl, settings.baseUrl) ? settings.apiKey : undefined,
    upstreamModel,
    contextWindow: entry.context_window,
    maxOutputTokens: entry.max_output_tokens,
    inputPricePerMillion: entry.input_price_per_million,
    outputPricePerMillion: entry.output_price_per_million,
    capabilities: {
      streaming: entry.capabilities.streaming ?? true,
      tools: entry.capabilities.tools ?? !local,
      jsonMode: entry.capabilities.json_mode ?? true,
      vision: entry.capabilities.vision ?? false,
    },
    fallbacks: entry.fallbacks,
    tokenizer: entry.tokenizer ?? (local ? "o200k_base" : tokenizerOf(upstreamModel)),
    source: "file",
  };
}

const normalised = (url: string | undefined) => (url ?? OPENAI_DEFAULT_BASE_URL).replace(/(?<!\/)\/+$/, "");
const sameServer = (a: string | undefined, b: string | undefined) => normalised(a) === normalised(b);

/** `models[2] ("llama-3.1-8b")`: the entry's index, and its id when it has one. */
function entryLabel(index: number, raw: unknown): string {
  const id = (raw as { id?: unknown } | null)?.id;
  return `models[${index}]${typeof id === "string" && id ? ` (${JSON.stringify(id)})` : ""}`;
}

/** `capabilities.tools`, `fallbacks[0]`: a field's path as written in the file. */
function pathOf(path: readonly PropertyKey[]): string {
  return path.reduce<string>((text, part) => (typeof part === "number" ? `${text}[${part}]` : text ? `${text}.${String(part)}` : String(part)), "");
}

function invalid(source: ModelsSource, problems: string[]): ConfigError {
  return new ConfigError(`Invalid models file ${source.path}: ${problems.join("; ")}`);
}
