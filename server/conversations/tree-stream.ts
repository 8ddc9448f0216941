import type { Response } from "express";
import type { components } from "../../generated/openapi.d.ts";
import { SSEWriter } from "../http/sse.ts";
import type { Logger } from "../logger.ts";
import type { Reply } from "../replies/types.ts";

type Delta = components["schemas"]["ChatStreamDelta"];
type Done = components["schemas"]["ChatStreamDone"];
type Failed = components["schemas"]["ChatStreamError"];

interface TreeStreamSettings {
  keepAliveMs: number;
  /** Aborts when the client leaves; the reply was given it too. */
  signal: AbortSignal;
  log: Logger;
}

/**
 * Carries a regenerated or edited reply over server-sent events: `delta`s, then `done` or `error`.
 * Unlike a streamed send, it runs on the connection, as every stream did before generations: there
 * is no generation to resume or stop, and a client that leaves aborts it.
 */
export async function streamTreeReplyEvents(res: Response, reply: Reply, settings: TreeStreamSettings): Promise<void> {
  const { log, signal } = settings;
  const sse = new SSEWriter(res, { keepAliveMs: settings.keepAliveMs, signal });
  try {
    for await (const event of reply) {
      if (event.type === "delta") {
        sse.event("delta", { content: event.content } satisfies Delta);
      } else if (event.type === "done") {
        const { usage, citations } = event.reply;
        sse.event("done", { message_id: event.reply.id, citations, usage: { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens } } satisfies Done);
      } else {
        if (signal.aborted) log.info("client disconnected; upstream call aborted");
        sse.event("error", { code: event.error.code, message: event.error.message } satisfies Failed);
      }
    }
  } finally {
    sse.close();
  }
}
