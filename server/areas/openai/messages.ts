import type { components } from "../../../generated/openapi.d.ts";
import type { ChatTurn, ToolCall } from "../../toolkit/providers/llm/types.ts";
import type { PastTurn } from "../replies/index.ts";
import { openaiRefusal } from "./errors.ts";

type ChatMessage = components["schemas"]["OpenAIChatMessage"];

// A stored message's limit (DECISIONS: Conversations and chat): the input may be stored.
const MAX_TEXT = 32_000;

/**
 * The client's messages, read as the reply engine takes them
 * (docs/adr/0309-what-the-last-message-of-an-openai-request-asks-for.md). The last user message is
 * the input; what comes after it stays after it.
 */
export interface ClientExchange {
  /** The `system` (and `developer`) messages before the last user message, in order. */
  system: string[];
  /** The turns before the last user message (user, assistant, tool), newest first (the engine's order). */
  history: PastTurn[];
  /** The last user message's text; empty when there is none. */
  input: string;
  /** The turns after the last user message, in order: system instructions, tool calls and results, a prefill. */
  trailing: ChatTurn[];
  /** The last message is the assistant's: the reply continues its text. */
  prefill: boolean;
  /** The history starts with an assistant message: the client sent its own opening (no greeting). */
  opensWithAssistant: boolean;
}

/** One message, read: its role as the engine knows it, its text, and its tool calls or the call it answers. */
type ReadMessage = { role: "system" | "user" | "assistant" | "tool"; content: string; toolCalls?: ToolCall[]; toolCallId?: string };

/**
 * Reads the client's messages. Refuses with 400 what cannot be honoured: the deprecated
 * `function_call`, content parts other than text, and messages with nothing to answer.
 */
export function readMessages(messages: readonly ChatMessage[]): ClientExchange {
  const read = messages.map((message, index) => readMessage(message, `messages[${index}]`));
  const inputIndex = read.findLastIndex((message) => message.role === "user");
  if (inputIndex >= 0 && inputIndex === read.length - 1 && read[inputIndex]!.content.trim() === "") {
    throw openaiRefusal(400, "invalid_request", "The last message must have text", `messages[${inputIndex}].content`);
  }
  const { before, after } = splitAround(read, inputIndex);
  const system = before.filter((message) => message.role === "system").map((message) => message.content);
  const turns = before.filter((message) => message.role !== "system") as (ReadMessage & { role: PastTurn["role"] })[];
  const last = read.at(-1);
  return {
    system,
    history: turns.map(toPastTurn).reverse(),
    input: inputIndex >= 0 ? read[inputIndex]!.content : "",
    trailing: after.map(toChatTurn),
    prefill: last?.role === "assistant" && !last.toolCalls,
    opensWithAssistant: (turns[0] ?? after.find((message) => message.role !== "system"))?.role === "assistant",
  };
}

/**
 * The messages before the input and after it. Without a user message: the leading system messages
 * are before, the rest after; with only system messages, the last of them is the instruction to
 * answer and comes after.
 */
function splitAround(read: ReadMessage[], inputIndex: number): { before: ReadMessage[]; after: ReadMessage[] } {
  if (inputIndex >= 0) return { before: read.slice(0, inputIndex), after: read.slice(inputIndex + 1) };
  const firstOther = read.findIndex((message) => message.role !== "system");
  const at = firstOther < 0 ? read.length - 1 : firstOther;
  return { before: read.slice(0, at), after: read.slice(at) };
}

function toPastTurn(message: ReadMessage & { role: PastTurn["role"] }): PastTurn {
  return {
    role: message.role,
    content: message.content,
    ...(message.toolCalls ? { toolCalls: message.toolCalls } : {}),
    ...(message.toolCallId ? { toolCallId: message.toolCallId } : {}),
  };
}

function toChatTurn(message: ReadMessage): ChatTurn {
  return { ...message };
}

function readMessage(message: ChatMessage, param: string): ReadMessage {
  if ("function_call" in message) {
    throw openaiRefusal(400, "unsupported", "Functions are deprecated in favour of tools: send `tools` and `tool` messages", `${param}.function_call`);
  }
  const role = message.role === "developer" ? "system" : message.role;
  if (role === "tool") {
    const callId = (message as { tool_call_id?: unknown }).tool_call_id;
    if (typeof callId !== "string" || callId === "") throw openaiRefusal(400, "invalid_request", `${param}.tool_call_id is required`, `${param}.tool_call_id`);
    return { role, content: textOf(message, param, true), toolCallId: callId };
  }
  const toolCalls = role === "assistant" ? readToolCalls((message as { tool_calls?: unknown }).tool_calls, `${param}.tool_calls`) : undefined;
  return { role, content: textOf(message, param, role === "assistant"), ...(toolCalls?.length ? { toolCalls } : {}) };
}

function readToolCalls(calls: unknown, param: string): ToolCall[] | undefined {
  if (calls === undefined || calls === null) return undefined;
  if (!Array.isArray(calls)) throw openaiRefusal(400, "invalid_request", `${param} must be an array`, param);
  return calls.map((call: unknown, index) => {
    const { id, type, function: fn } = (call ?? {}) as { id?: unknown; type?: unknown; function?: { name?: unknown; arguments?: unknown } };
    if (typeof id !== "string" || type !== "function" || typeof fn?.name !== "string" || typeof fn.arguments !== "string") {
      throw openaiRefusal(400, "invalid_request", `${param}[${index}] must be {id, type: "function", function: {name, arguments}}`, `${param}[${index}]`);
    }
    return { id, name: fn.name, arguments: fn.arguments };
  });
}

function textOf(message: ChatMessage, param: string, mayBeEmpty: boolean): string {
  const { content } = message;
  let text: string;
  if (content === null || content === undefined) {
    // OpenAI allows an assistant turn without content beside tool calls (and a tool result may be empty).
    if (!mayBeEmpty) throw openaiRefusal(400, "invalid_request", `${param}.content is required`, `${param}.content`);
    text = "";
  } else if (typeof content === "string") {
    text = content;
  } else {
    text = content
      .map((part, i) => {
        if (part.type !== "text" || typeof part.text !== "string") {
          throw openaiRefusal(400, "unsupported", `Only text content parts are supported (got "${part.type}")`, `${param}.content[${i}].type`);
        }
        return part.text;
      })
      .join("\n");
  }
  if (text.length > MAX_TEXT) throw openaiRefusal(400, "invalid_request", `A message may have at most ${MAX_TEXT} characters`, `${param}.content`);
  return text;
}
