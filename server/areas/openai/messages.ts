import type { components } from "../../../generated/openapi.d.ts";
import type { PastTurn } from "../replies/index.ts";
import { openaiRefusal } from "./errors.ts";

type ChatMessage = components["schemas"]["OpenAIChatMessage"];

// A stored message's limit (DECISIONS: Conversations and chat): the input may be stored.
const MAX_TEXT = 32_000;

/** The client's messages, read as the reply engine takes them. */
export interface ClientExchange {
  /** The `system` (and `developer`) messages' text, in order. */
  system: string[];
  /** The earlier user and assistant messages, newest first (the engine's order). */
  history: PastTurn[];
  /** The last message: the user's new one. */
  input: string;
  /** The history starts with an assistant message: the client sent its own opening (no greeting). */
  opensWithAssistant: boolean;
}

/**
 * Reads the client's messages. Refuses with 400 what the engine cannot honour: tool and function
 * turns, non-text content, and a last message that is not the user's.
 */
export function readMessages(messages: readonly ChatMessage[]): ClientExchange {
  const system: string[] = [];
  const turns: PastTurn[] = [];
  messages.forEach((message, index) => {
    const param = `messages[${index}]`;
    if (message.role === "tool" || message.role === "function") {
      throw openaiRefusal(400, "unsupported", "Tool and function messages are not supported: personas do not call tools", `${param}.role`);
    }
    if ("tool_calls" in message || "function_call" in message) {
      throw openaiRefusal(400, "unsupported", "Tool calls are not supported: personas do not call tools", `${param}.tool_calls`);
    }
    const text = textOf(message, param);
    if (message.role === "system" || message.role === "developer") system.push(text);
    else turns.push({ role: message.role, content: text });
  });
  const last = turns.at(-1);
  if (messages.at(-1)?.role !== "user" || !last || last.content.trim() === "") {
    throw openaiRefusal(400, "invalid_request", "The last message must be the user's, with text", "messages");
  }
  return {
    system,
    history: turns.slice(0, -1).reverse(),
    input: last.content,
    opensWithAssistant: turns[0]?.role === "assistant",
  };
}

function textOf(message: ChatMessage, param: string): string {
  const { content } = message;
  let text: string;
  if (content === null || content === undefined) {
    // OpenAI allows an assistant turn without content only beside tool calls, refused above.
    if (message.role !== "assistant") throw openaiRefusal(400, "invalid_request", `${param}.content is required`, `${param}.content`);
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
