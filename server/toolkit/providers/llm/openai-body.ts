import type OpenAI from "openai";
import type { ChatRequest, ChatTurn, ModelOptions, ToolCall } from "./types.ts";

/**
 * The Chat Completions body an OpenAI-compatible provider gets: the turns with their tool calls and
 * results, the token cap under the name the provider understands, and each model option that is
 * set under its OpenAI name (unset ones are left out, so the provider's own defaults hold).
 */
export function upstreamBody(request: ChatRequest, settings: { maxTokens: number; isOpenAI: boolean }): OpenAI.ChatCompletionCreateParamsNonStreaming {
  return {
    model: request.model,
    messages: request.messages.map(upstreamTurn),
    // OpenAI rejects `max_tokens` for its reasoning models; most compatible servers only know
    // `max_tokens`. Each gets the name it understands.
    ...(settings.isOpenAI ? { max_completion_tokens: settings.maxTokens } : { max_tokens: settings.maxTokens }),
    ...upstreamOptions(request.options ?? {}),
  };
}

function upstreamTurn(turn: ChatTurn): OpenAI.ChatCompletionMessageParam {
  if (turn.role === "tool") return { role: "tool", content: turn.content, tool_call_id: turn.toolCallId ?? "" };
  if (turn.role === "assistant" && turn.toolCalls?.length) {
    return {
      role: "assistant",
      content: turn.content === "" ? null : turn.content,
      tool_calls: turn.toolCalls.map((call) => ({ id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } })),
    };
  }
  return { role: turn.role, content: turn.content };
}

function upstreamOptions(options: ModelOptions): Partial<OpenAI.ChatCompletionCreateParamsNonStreaming> {
  const body: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming> = {};
  if (options.temperature !== undefined) body.temperature = options.temperature;
  if (options.topP !== undefined) body.top_p = options.topP;
  if (options.presencePenalty !== undefined) body.presence_penalty = options.presencePenalty;
  if (options.frequencyPenalty !== undefined) body.frequency_penalty = options.frequencyPenalty;
  if (options.stop !== undefined) body.stop = options.stop;
  if (options.seed !== undefined) body.seed = options.seed;
  if (options.logitBias !== undefined) body.logit_bias = options.logitBias;
  if (options.user !== undefined) body.user = options.user;
  if (options.responseFormat !== undefined) {
    const format = options.responseFormat;
    body.response_format =
      format.type === "json_schema"
        ? {
            type: "json_schema",
            json_schema: {
              name: format.name,
              ...(format.schema ? { schema: format.schema } : {}),
              ...(format.description ? { description: format.description } : {}),
              ...(format.strict !== undefined ? { strict: format.strict } : {}),
            },
          }
        : { type: format.type };
  }
  if (options.tools !== undefined) {
    body.tools = options.tools.map((tool) => ({
      type: "function",
      function: {
        name: tool.name,
        ...(tool.description !== undefined ? { description: tool.description } : {}),
        ...(tool.parameters !== undefined ? { parameters: tool.parameters } : {}),
        ...(tool.strict !== undefined ? { strict: tool.strict } : {}),
      },
    }));
  }
  if (options.toolChoice !== undefined) body.tool_choice = options.toolChoice as OpenAI.ChatCompletionToolChoiceOption;
  if (options.parallelToolCalls !== undefined) body.parallel_tool_calls = options.parallelToolCalls;
  return body;
}

/** The function calls of a provider's message, in the service's terms (other kinds of call are not ours). */
export function toolCallsOf(calls: readonly OpenAI.ChatCompletionMessageToolCall[] | null | undefined): ToolCall[] {
  return (calls ?? []).flatMap((call) => (call.type === "function" ? [{ id: call.id, name: call.function.name, arguments: call.function.arguments }] : []));
}
