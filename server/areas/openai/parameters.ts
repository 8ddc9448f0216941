import type { components } from "../../../generated/openapi.d.ts";
import type { ModelSettings } from "../personas/index.ts";
import type { ModelOptions, ResponseFormat } from "../../toolkit/providers/llm/types.ts";
import { openaiRefusal } from "./errors.ts";
import type { ModelRegistry } from "../../toolkit/models/index.ts";
import { inputTooLong, type ReplyConnection } from "../replies/index.ts";

type CompletionRequest = components["schemas"]["OpenAIChatCompletionRequest"];
type ModelParameter = components["schemas"]["ModelParameter"];

/** Every parameter a persona's owner can let clients set; the default when the settings name none. */
const ALL_PARAMETERS: readonly ModelParameter[] = [
  "temperature",
  "top_p",
  "presence_penalty",
  "frequency_penalty",
  "max_tokens",
  "stop",
  "seed",
  "response_format",
  "logit_bias",
  "tools",
];

/** Request fields and the owner's permission each needs (`max_completion_tokens` is `max_tokens` by another name). */
const PERMISSION: Record<string, ModelParameter> = {
  temperature: "temperature",
  top_p: "top_p",
  presence_penalty: "presence_penalty",
  frequency_penalty: "frequency_penalty",
  max_tokens: "max_tokens",
  max_completion_tokens: "max_tokens",
  stop: "stop",
  seed: "seed",
  response_format: "response_format",
  logit_bias: "logit_bias",
  tools: "tools",
  tool_choice: "tools",
  parallel_tool_calls: "tools",
};

/**
 * Fields of the request that are not model parameters: the messages and how the answer is sent,
 * the end user's id (passed on, never refused), and the service's own extension.
 */
const CARRIAGE = new Set(["model", "messages", "stream", "stream_options", "n", "user", "conversation_id", "conversationId", "store", "metadata"]);

/** OpenAI parameters the service cannot honour, with why: refused, never ignored. */
const REFUSED: Record<string, string> = {
  logprobs: "Log probabilities are not available",
  top_logprobs: "Log probabilities are not available",
  audio: "Audio output is not available; use the voice endpoints",
  modalities: "Only text output is available",
  prediction: "Predicted outputs are not supported",
  web_search_options: "Web search is not available",
  functions: "Functions are deprecated in favour of tools: send `tools`",
  function_call: "Functions are deprecated in favour of tools: send `tool_choice`",
  service_tier: "Service tiers are not available",
};

/** What a completion asks of the model: the options and the token cap. */
export interface CompletionParameters {
  options: ModelOptions;
  maxTokens: number | undefined;
}

/**
 * The model options of a completion: the persona's defaults, with the client's own values over
 * them where the owner lets clients set them (docs/adr/0310-model-parameters-reach-the-model-over-the-persona-s-defaults.md).
 * A parameter the owner keeps, one the service cannot honour, or one OpenAI does not know is
 * refused with 400, as OpenAI refuses arguments it does not recognise.
 */
export function completionParameters(request: CompletionRequest, settings: ModelSettings): CompletionParameters {
  const allowed = new Set(settings.client_may_set ?? ALL_PARAMETERS);
  for (const [field, value] of Object.entries(request)) {
    if (value === undefined || value === null || CARRIAGE.has(field)) continue;
    if (field in REFUSED) {
      // `false` asks for nothing; an empty list of modalities or ["text"] neither.
      if (value === false || (field === "modalities" && Array.isArray(value) && value.every((m) => m === "text"))) continue;
      throw openaiRefusal(400, "unsupported", REFUSED[field]!, field);
    }
    const permission = PERMISSION[field];
    if (!permission) throw openaiRefusal(400, "unknown_parameter", `Unrecognized request argument supplied: ${field}`, field);
    if (!allowed.has(permission)) {
      throw openaiRefusal(400, "parameter_not_allowed", `This persona's owner does not let clients set ${field}`, field);
    }
  }
  if (request.n !== undefined && request.n !== null && request.n !== 1) {
    throw openaiRefusal(400, "unsupported", "Only one choice per request is supported (n must be 1)", "n");
  }
  if (request.store === true) throw openaiRefusal(400, "unsupported", "Completions are not stored for later retrieval (store must be false)", "store");
  const pick = <T>(client: T | null | undefined, own: T | null | undefined): T | undefined => client ?? own ?? undefined;
  const stop = pick(request.stop, settings.stop);
  const format = request.response_format ? responseFormat(request.response_format) : undefined;
  const options: ModelOptions = {};
  const set = <K extends keyof ModelOptions>(key: K, value: ModelOptions[K] | undefined) => {
    if (value !== undefined) options[key] = value;
  };
  set("temperature", pick(request.temperature, settings.temperature));
  set("topP", pick(request.top_p, settings.top_p));
  set("presencePenalty", pick(request.presence_penalty, settings.presence_penalty));
  set("frequencyPenalty", pick(request.frequency_penalty, settings.frequency_penalty));
  set("stop", stop === undefined ? undefined : typeof stop === "string" ? [stop] : stop);
  set("seed", pick(request.seed, settings.seed));
  set("responseFormat", format);
  set("logitBias", request.logit_bias ?? undefined);
  set("user", request.user ?? undefined);
  set("tools", request.tools?.map(({ function: fn }) => ({ ...fn, ...(fn.parameters ? { parameters: fn.parameters as Record<string, unknown> } : {}) })));
  set("toolChoice", request.tool_choice ?? undefined);
  set("parallelToolCalls", request.parallel_tool_calls ?? undefined);
  if (options.stop && options.stop.length > 4) throw openaiRefusal(400, "invalid_request", "At most 4 stop sequences", "stop");
  return { options, maxTokens: pick(request.max_completion_tokens ?? request.max_tokens, settings.max_tokens) };
}

function responseFormat(format: NonNullable<CompletionRequest["response_format"]>): ResponseFormat {
  if (format.type !== "json_schema") return { type: format.type };
  if (!format.json_schema) throw openaiRefusal(400, "invalid_request", "response_format.json_schema is required with type json_schema", "response_format.json_schema");
  const { name, description, schema, strict } = format.json_schema;
  return {
    type: "json_schema",
    name,
    ...(description !== undefined ? { description } : {}),
    ...(schema ? { schema: schema as Record<string, unknown> } : {}),
    ...(strict !== undefined ? { strict } : {}),
  };
}

/**
 * What the persona's model cannot honour, refused before anything runs (issue 40, item 3): tools
 * or a JSON reply from a model without the capability, and a prompt over the model's own context
 * (OpenAI's `context_length_exceeded`). On the caller's own connection the provider answers for
 * itself: only its context window applies.
 */
export function refuseBeyondModel(registry: ModelRegistry, model: string, options: ModelOptions, prompt: string, connection: ReplyConnection | undefined): void {
  const entry = registry.resolve(model);
  if (!connection) {
    if (options.tools?.length && !entry.capabilities.tools) throw openaiRefusal(400, "unsupported", `The persona's model \`${entry.id}\` cannot call tools`, "tools");
    if (options.responseFormat && options.responseFormat.type !== "text" && !entry.capabilities.jsonMode) {
      throw openaiRefusal(400, "unsupported", `The persona's model \`${entry.id}\` cannot answer in JSON`, "response_format");
    }
  }
  const budget = registry.budget(model, connection);
  const tooLong = inputTooLong(registry.source === "file" ? { ...budget, model: entry.id } : budget, prompt);
  if (tooLong) throw openaiRefusal(400, "context_length_exceeded", tooLong.message, "messages");
}
