import type { components } from "../../../generated/openapi.d.ts";
import type { PersonaRow } from "../personas/index.ts";
import type { TokenUsage } from "../../toolkit/providers/llm/types.ts";

// Personas and replies as OpenAI's wire objects.

type Schemas = components["schemas"];
type Chunk = Schemas["OpenAIChatCompletionChunk"];

const seconds = (at: Date) => Math.floor(at.getTime() / 1000);

export function toModel(row: PersonaRow): Schemas["OpenAIModel"] {
  return { id: row.id, object: "model", created: seconds(row.created_at), owned_by: row.creator_id, name: row.name };
}

export function toUsage(usage: TokenUsage): Schemas["OpenAIUsage"] {
  return { prompt_tokens: usage.inputTokens, completion_tokens: usage.outputTokens, total_tokens: usage.inputTokens + usage.outputTokens };
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

export function toCompletion(head: CompletionHead, content: string, usage: TokenUsage, storedId: string | null): Schemas["OpenAIChatCompletion"] {
  return {
    ...head,
    object: "chat.completion",
    choices: [{ index: 0, message: { role: "assistant", content, refusal: null }, finish_reason: "stop", logprobs: null }],
    usage: toUsage(usage),
    persona_message_id: storedId,
  };
}

/** One streamed chunk with a choice: the first carries the role, the last the finish reason. */
export function toChunk(head: CompletionHead, delta: Schemas["OpenAIChunkDelta"], finish: "stop" | null = null): Chunk {
  return { ...head, object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] };
}

/** The usage chunk of `stream_options.include_usage`: no choices. */
export function toUsageChunk(head: CompletionHead, usage: TokenUsage): Chunk {
  return { ...head, object: "chat.completion.chunk", choices: [], usage: toUsage(usage) };
}
