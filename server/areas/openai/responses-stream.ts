import type { Response } from "express";
import type { components } from "../../../generated/openapi.d.ts";
import { SSEWriter } from "../../toolkit/http/sse.ts";
import type { Logger } from "../../toolkit/logger.ts";
import type { Reply } from "../replies/index.ts";
import type { ApiError } from "../../toolkit/http/errors.ts";
import { openaiError } from "./errors.ts";
import { completedResponse, failedResponse, outputMessage, outputText, type ResponseHead } from "./responses-views.ts";
import { withheldReply } from "./withheld.ts";

type StreamEvent = components["schemas"]["OpenAIResponsesStreamEvent"];

interface StreamSettings {
  keepAliveMs: number;
  signal: AbortSignal;
  log: Logger;
  now: () => Date;
  /** The error as the Responses request names its fields. */
  translateError: (error: ApiError) => ApiError;
}

/**
 * Carries a reply as the Responses API's stream of named events, each numbered by
 * `sequence_number`: the response created and in progress, its one message and text part added,
 * a delta per piece of text, then the text, part and message done and `response.completed` (or
 * `response.incomplete`) with the whole response. A failure after the 200 is an `error` event (which
 * the `openai` SDK raises) and then `response.failed` (which the Vercel AI SDK reads), and the stream
 * ends.
 */
export async function streamResponse(res: Response, reply: Reply, head: ResponseHead, settings: StreamSettings): Promise<void> {
  const sse = new SSEWriter(res, { keepAliveMs: settings.keepAliveMs, signal: settings.signal });
  let sequence = 0;
  // `type` and `sequence_number` first, as OpenAI writes them.
  const send = ({ type, ...rest }: Omit<StreamEvent, "sequence_number">) => sse.event(type, { type, sequence_number: sequence++, ...rest });
  const at = { item_id: head.messageId, output_index: 0, content_index: 0 };
  let text = "";
  try {
    send({ type: "response.created", response: head.base });
    send({ type: "response.in_progress", response: head.base });
    send({ type: "response.output_item.added", output_index: 0, item: outputMessage(head, "in_progress") });
    send({ type: "response.content_part.added", ...at, part: outputText("") });
    for await (const event of reply) {
      if (event.type === "delta") {
        if (!event.content) continue;
        text += event.content;
        send({ type: "response.output_text.delta", ...at, delta: event.content, logprobs: [] });
      } else if (event.type === "done" || (event.type === "error" && withheldReply(event.error))) {
        // A reply the content policy withheld ends as an incomplete response (withheld.ts).
        const ended = event.type === "done" ? event.reply : withheldReply(event.error)!;
        const response = completedResponse(head, ended, settings.now());
        const item = response.output[0]!;
        send({ type: "response.output_text.done", ...at, text: ended.content, logprobs: [] });
        send({ type: "response.content_part.done", ...at, part: outputText(ended.content) });
        send({ type: "response.output_item.done", output_index: 0, item });
        send({ type: response.status === "incomplete" ? "response.incomplete" : "response.completed", response });
      } else if (event.type === "error") {
        if (settings.signal.aborted) settings.log.info("client disconnected; upstream call aborted");
        const { error } = openaiError(settings.translateError(event.error)).body;
        send({ type: "error", code: error.code, message: error.message, param: error.param });
        send({ type: "response.failed", response: failedResponse(head, text, { code: error.code ?? "server_error", message: error.message }) });
      }
      // Tool call events cannot occur: a request with tools is refused before the reply begins.
    }
  } finally {
    sse.close();
  }
}
