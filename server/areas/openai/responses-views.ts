import type { components } from "../../../generated/openapi.d.ts";
import type { FinishReason, TokenUsage } from "../../toolkit/providers/llm/types.ts";
import type { ResponsesRequest } from "./responses-request.ts";

// Replies as the Responses API's wire objects.

type Schemas = components["schemas"];
export type ResponseObject = Schemas["OpenAIResponseObject"];
export type OutputMessage = Schemas["OpenAIResponsesOutputMessage"];
export type OutputText = Schemas["OpenAIResponsesOutputText"];

const seconds = (at: Date) => Math.floor(at.getTime() / 1000);

/** OpenAI's ids are a prefix and hex digits; a UUIDv7's hex keeps them unique and time-ordered. */
const hexId = (prefix: string, uuid: string) => `${prefix}_${uuid.replaceAll("-", "")}`;

/** What every event of one response repeats: its ids and the request's settings, echoed. */
export interface ResponseHead {
  /** The response as it stands before the reply: `in_progress`, no output. */
  base: ResponseObject;
  /** The id of the one output message. */
  messageId: string;
}

export function responseHead(ids: { response: string; message: string }, request: ResponsesRequest, at: Date): ResponseHead {
  const format = request.text?.format ?? { type: "text" as const };
  return {
    messageId: hexId("msg", ids.message),
    base: {
      id: hexId("resp", ids.response),
      object: "response",
      created_at: seconds(at),
      status: "in_progress",
      completed_at: null,
      error: null,
      incomplete_details: null,
      instructions: request.instructions ?? null,
      max_output_tokens: request.max_output_tokens ?? null,
      model: request.model,
      output: [],
      temperature: request.temperature ?? null,
      top_p: request.top_p ?? null,
      parallel_tool_calls: request.parallel_tool_calls ?? true,
      tool_choice: request.tool_choice ?? "auto",
      tools: [],
      text: { format },
      truncation: "disabled",
      metadata: request.metadata ?? {},
      user: request.user ?? null,
      store: false,
      previous_response_id: null,
      background: false,
    },
  };
}

export function outputText(text: string): OutputText {
  return { type: "output_text", text, annotations: [], logprobs: [] };
}

/** The reply as the response's output message; no parts before the reply has begun. */
export function outputMessage(head: ResponseHead, status: OutputMessage["status"], text?: string): OutputMessage {
  return { type: "message", id: head.messageId, status, role: "assistant", content: text === undefined ? [] : [outputText(text)] };
}

export function toResponsesUsage(usage: TokenUsage): Schemas["OpenAIResponsesUsage"] {
  return {
    input_tokens: usage.inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.inputTokens + usage.outputTokens,
  };
}

/** A reply cut short by its token cap or a filter is `incomplete`, as OpenAI says it. */
function incompleteReason(finish: FinishReason | undefined): "max_output_tokens" | "content_filter" | null {
  if (finish === "length") return "max_output_tokens";
  if (finish === "content_filter") return "content_filter";
  return null;
}

/** The complete response: the reply's text, status and usage. */
export function completedResponse(head: ResponseHead, reply: { content: string; usage: TokenUsage; finishReason?: FinishReason }, at: Date): ResponseObject {
  const reason = incompleteReason(reply.finishReason);
  const status = reason ? "incomplete" : "completed";
  return {
    ...head.base,
    status,
    completed_at: seconds(at),
    incomplete_details: reason ? { reason } : null,
    output: [outputMessage(head, status, reply.content)],
    usage: toResponsesUsage(reply.usage),
  };
}

/** The response of a failed stream: what the reply had produced, and why it failed. */
export function failedResponse(head: ResponseHead, text: string, error: { code: string; message: string }): ResponseObject {
  return { ...head.base, status: "failed", error, output: [outputMessage(head, "incomplete", text)] };
}
