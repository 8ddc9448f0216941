import type { components } from "../../../generated/openapi.d.ts";
import { openaiRefusal } from "./errors.ts";

// A Responses API request read as the chat completion request it means
// (docs/adr/0308-the-responses-api-is-a-translation-over-chat-completions-stateless.md): the chat
// completion door then applies its own rules, forwarding and refusals, and its errors are told
// back in the Responses request's terms.

type Schemas = components["schemas"];
export type ResponsesRequest = Schemas["OpenAIResponsesRequest"];
type InputItem = Schemas["OpenAIResponsesInputItem"];
type ChatRequest = Schemas["OpenAIChatCompletionRequest"];
type ChatMessage = Schemas["OpenAIChatMessage"];

/** The chat completion request, and how to name one of its fields as the Responses request's. */
export interface Translation {
  request: ChatRequest;
  /**
   * `messages[2].content` -> `input[1].content`, `max_completion_tokens` -> `max_output_tokens`,
   * ...; `code` tells a refusal of the client's system text, which may be `instructions`.
   */
  paramOf(chatParam: string, code?: string): string;
}

/** Fields that are the same in both APIs, copied as they are. */
const SAME_NAMED = ["temperature", "top_p", "user"] as const;

/** Chat completion fields that come from another Responses field. */
const RENAMED: Record<string, string> = {
  max_completion_tokens: "max_output_tokens",
  max_tokens: "max_output_tokens",
  response_format: "text.format",
  logprobs: "top_logprobs",
  top_logprobs: "top_logprobs",
  messages: "input",
};

const NOTHING_STORED = "nothing is stored on this server";

/**
 * Translates the request, refusing with OpenAI's 400 what needs state on the server (earlier
 * responses, conversations, stored prompts, background runs), tools, and input items that are not
 * messages.
 */
export function toChatRequest(body: ResponsesRequest): Translation {
  refuseStateful(body);
  refuseTools(body);
  const messages: ChatMessage[] = [];
  // Where each chat message came from: `instructions`, `input` (a string input) or `input[i]`.
  const origins: string[] = [];
  if (typeof body.instructions === "string") {
    messages.push({ role: "system", content: body.instructions });
    origins.push("instructions");
  }
  if (typeof body.input === "string") {
    messages.push({ role: "user", content: body.input });
    origins.push("input");
  } else {
    body.input.forEach((item, index) => {
      messages.push(toChatMessage(item, `input[${index}]`));
      origins.push(`input[${index}]`);
    });
  }
  const request: ChatRequest = { model: body.model, messages };
  for (const field of SAME_NAMED) {
    const value = body[field];
    if (value !== undefined && value !== null) Object.assign(request, { [field]: value });
  }
  if (body.max_output_tokens !== undefined && body.max_output_tokens !== null) request.max_completion_tokens = body.max_output_tokens;
  if (body.top_logprobs) Object.assign(request, { logprobs: true, top_logprobs: body.top_logprobs });
  const format = body.text?.format;
  if (format && format.type !== "text") request.response_format = toResponseFormat(format);
  const systemOrigin = origins.find((_, index) => messages[index]!.role === "system" || messages[index]!.role === "developer");
  return {
    request,
    paramOf: (param, code) => (code === "system_messages_not_allowed" && param === "messages" && systemOrigin ? systemOrigin : renameParam(param, origins)),
  };
}

function refuseStateful(body: ResponsesRequest): void {
  if (present(body.previous_response_id)) {
    throw openaiRefusal(
      400,
      "unsupported",
      `previous_response_id is not supported: ${NOTHING_STORED}, so there is no earlier response to continue. Send the earlier messages in \`input\` instead.`,
      "previous_response_id",
    );
  }
  if (present(body.conversation)) {
    throw openaiRefusal(400, "unsupported", `conversation is not supported: ${NOTHING_STORED}. Send the earlier messages in \`input\` instead.`, "conversation");
  }
  if (present(body.prompt)) {
    throw openaiRefusal(400, "unsupported", `Stored prompts are not supported: ${NOTHING_STORED}. Send \`instructions\` and \`input\` instead.`, "prompt");
  }
  if (body.background === true) {
    throw openaiRefusal(400, "unsupported", `Background responses are not supported: ${NOTHING_STORED}, so a response cannot be fetched later.`, "background");
  }
}

function refuseTools(body: ResponsesRequest): void {
  if (Array.isArray(body.tools) && body.tools.length > 0) {
    throw openaiRefusal(400, "unsupported", "Tools are not supported by this Responses API; function calling goes through /openai/v1/chat/completions", "tools");
  }
  const choice = body.tool_choice;
  if (present(choice) && choice !== "none" && choice !== "auto") {
    throw openaiRefusal(400, "unsupported", "tool_choice may only be `none` or `auto`: this Responses API has no tools", "tool_choice");
  }
}

/** One input item as a chat message: messages only, with text content. */
function toChatMessage(item: InputItem, param: string): ChatMessage {
  if (item.type !== undefined && item.type !== "message") {
    const hint =
      item.type === "item_reference"
        ? ` Item references name stored items, and ${NOTHING_STORED}: send the message itself (the Vercel AI SDK does with \`providerOptions.openai.store: false\`).`
        : " Only messages are supported: no tools, reasoning items or stored items.";
    throw openaiRefusal(400, "unsupported", `Input items of type "${item.type}" are not supported.${hint}`, `${param}.type`);
  }
  if (item.role === undefined) throw openaiRefusal(400, "invalid_request", `${param}.role is required for a message`, `${param}.role`);
  const { content } = item;
  if (content === undefined) throw openaiRefusal(400, "invalid_request", `${param}.content is required for a message`, `${param}.content`);
  if (typeof content === "string") return { role: item.role, content };
  return {
    role: item.role,
    content: content.map((part, index) => {
      if ((part.type !== "input_text" && part.type !== "output_text") || typeof part.text !== "string") {
        throw openaiRefusal(
          400,
          "unsupported",
          `Only input_text and output_text content parts are supported (got "${part.type}")`,
          `${param}.content[${index}].type`,
        );
      }
      return { type: "text", text: part.text };
    }),
  };
}

/** `text.format` as the chat completion's `response_format`. */
function toResponseFormat(format: Schemas["OpenAIResponsesTextFormat"]): NonNullable<ChatRequest["response_format"]> {
  if (format.type !== "json_schema") return { type: format.type };
  if (format.name === undefined) throw openaiRefusal(400, "invalid_request", "text.format.name is required for json_schema", "text.format.name");
  return {
    type: "json_schema",
    json_schema: {
      name: format.name,
      ...(format.description !== undefined ? { description: format.description } : {}),
      ...(format.schema !== undefined ? { schema: format.schema } : {}),
      ...(format.strict !== undefined ? { strict: format.strict } : {}),
    },
  };
}

/** A chat completion field as the Responses request names it. */
function renameParam(param: string, origins: readonly string[]): string {
  const message = /^messages\[(\d+)\](.*)$/.exec(param);
  if (message) {
    const origin = origins[Number(message[1])] ?? "input";
    // `instructions` and a string `input` are the message's text itself.
    return origin.includes("[") ? `${origin}${message[2]}` : origin;
  }
  const [head = param, ...rest] = param.split(".");
  const renamed = RENAMED[head];
  if (renamed === undefined) return param;
  // `response_format.json_schema.name` is `text.format.name`.
  return [renamed, ...rest.filter((part) => part !== "json_schema")].join(".");
}

function present(value: unknown): boolean {
  return value !== undefined && value !== null;
}
