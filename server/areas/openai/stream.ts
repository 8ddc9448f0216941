import type { Response } from "express";
import { SSEWriter } from "../../toolkit/http/sse.ts";
import type { Logger } from "../../toolkit/logger.ts";
import type { Reply } from "../replies/index.ts";
import { openaiError } from "./errors.ts";
import { toChunk, toToolCallDelta, toUsageChunk, type CompletionHead } from "./views.ts";
import { withheldReply } from "./withheld.ts";

interface StreamSettings {
  keepAliveMs: number;
  signal: AbortSignal;
  includeUsage: boolean;
  log: Logger;
}

/**
 * Carries a reply as OpenAI's stream: a first chunk with the role, a chunk per delta (text or a
 * piece of a tool call), a last one with the model's `finish_reason` (and the usage chunk when asked for), then `data: [DONE]`; a
 * reply the content policy withheld ends the same way with `content_filter` (withheld.ts). A failure
 * after the 200 is OpenAI's error object as an event, and the stream ends without `[DONE]`, which
 * the official SDKs raise as an error.
 */
export async function streamCompletion(res: Response, reply: Reply, head: CompletionHead, settings: StreamSettings): Promise<void> {
  const sse = new SSEWriter(res, { keepAliveMs: settings.keepAliveMs, signal: settings.signal });
  try {
    sse.data(toChunk(head, { role: "assistant", content: "" }));
    for await (const event of reply) {
      if (event.type === "delta") {
        if (event.content) sse.data(toChunk(head, { content: event.content }));
      } else if (event.type === "tool_call") {
        sse.data(toChunk(head, { tool_calls: [toToolCallDelta(event.call)] }));
      } else if (event.type === "done") {
        sse.data(toChunk(head, {}, event.reply.finishReason));
        if (settings.includeUsage) sse.data(toUsageChunk(head, event.reply.usage, event.reply.costNanos));
        sse.data("[DONE]");
      } else {
        const withheld = withheldReply(event.error);
        if (withheld) {
          sse.data(toChunk(head, {}, withheld.finishReason));
          if (settings.includeUsage) sse.data(toUsageChunk(head, withheld.usage));
          sse.data("[DONE]");
          continue;
        }
        if (settings.signal.aborted) settings.log.info("client disconnected; upstream call aborted");
        sse.data(openaiError(event.error).body);
      }
    }
  } finally {
    sse.close();
  }
}
