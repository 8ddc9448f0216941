import type { components } from "../../../generated/openapi.d.ts";
import type { PersonaRow } from "../personas/index.ts";
import type { ReplyRecord } from "../replies/index.ts";
import type { ToolCall, ToolCallDelta, TokenUsage } from "../../toolkit/providers/llm/types.ts";
import { usdOf } from "../../toolkit/models/index.ts";

// Personas and replies as OpenAI's wire objects.

type Schemas = components["schemas"];
type Chunk = Schemas["OpenAIChatCompletionChunk"];
type FinishReason = Schemas["OpenAIFinishReason"];

const seconds = (at: Date) => Math.floor(at.getTime() / 1000);

/**
 * A persona as a model, under the name the caller would send as `model` (its handle, or
 * `<username>/<handle>`), with its model's context window as `context_length`.
 */
export function toModel(row: PersonaRow, name: string, contextLength: number): Schemas["OpenAIModel"] {
  return { id: name, object: "model", created: seconds(row.created_at), owned_by: row.creator_id, name: row.name, persona_id: row.id, context_length: contextLength };
}

/** OpenAI's usage, with the reply's cost in USD (an extension field) when it is known. */
export function toUsage(usage: TokenUsage, costNanos?: number): Schemas["OpenAIUsage"] {
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    ...(costNanos !== undefined ? { cost_usd: usdOf(costNanos) } : {}),
  };
}

/** What every object of one completion repeats. */
export interface CompletionHead {
  id: string;
  created: number;
  model: string;
}

export function completionHead(id: string, model: string, at: Date): CompletionHead {
  return { id: `chatcmpl-${id}`, created: seconds(at), model };
}

function toToolCall(call: ToolCall): Schemas["OpenAIToolCall"] {
  return { id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } };
}

/** A whole reply: its text (null when the model only called tools), its tool calls and why it ended. */
export function toCompletion(head: CompletionHead, reply: Pick<ReplyRecord, "content" | "usage" | "finishReason" | "toolCalls"> & { costNanos?: number }, storedId: string | null): Schemas["OpenAIChatCompletion"] {
  const toolCalls = reply.toolCalls?.map(toToolCall);
  const message: Schemas["OpenAIAssistantMessage"] = {
    role: "assistant",
    content: toolCalls && reply.content === "" ? null : reply.content,
    refusal: null,
    ...(toolCalls ? { tool_calls: toolCalls } : {}),
  };
  return {
    ...head,
    object: "chat.completion",
    choices: [{ index: 0, message, finish_reason: reply.finishReason, logprobs: null }],
    usage: toUsage(reply.usage, reply.costNanos),
    persona_message_id: storedId,
  };
}

/** One streamed chunk with a choice: the first carries the role, the last the finish reason. */
export function toChunk(head: CompletionHead, delta: Schemas["OpenAIChunkDelta"], finish: FinishReason | null = null): Chunk {
  return { ...head, object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] };
}

/** A streamed piece of a tool call, in OpenAI's delta shape. */
export function toToolCallDelta(call: ToolCallDelta): Schemas["OpenAIToolCallDelta"] {
  return {
    index: call.index,
    ...(call.id ? { id: call.id, type: "function" as const } : {}),
    ...(call.name !== undefined || call.arguments !== undefined
      ? { function: { ...(call.name !== undefined ? { name: call.name } : {}), ...(call.arguments !== undefined ? { arguments: call.arguments } : {}) } }
      : {}),
  };
}

/** The usage chunk of `stream_options.include_usage`: no choices. */
export function toUsageChunk(head: CompletionHead, usage: TokenUsage, costNanos?: number): Chunk {
  return { ...head, object: "chat.completion.chunk", choices: [], usage: toUsage(usage, costNanos) };
}
