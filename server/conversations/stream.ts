import type { Response } from "express";
import type { components } from "../../generated/openapi.d.ts";
import type { IdempotentOutcome } from "../http/idempotency.ts";
import { SSEWriter } from "../http/sse.ts";
import type { Logger } from "../logger.ts";
import type { Reply } from "../replies/types.ts";
import type { MessageRow } from "./store.ts";

type Delta = components["schemas"]["ChatStreamDelta"];
type Done = components["schemas"]["ChatStreamDone"];
type Failed = components["schemas"]["ChatStreamError"];

/** What a streamed send records for retries with its Idempotency-Key. */
export type StreamOutcome =
  | { outcome: "done"; user_message_id: string; assistant_message_id: string; usage?: Done["usage"] }
  /** `user_message_id` is null when not even the user message was stored. */
  | { outcome: "failed"; user_message_id: string | null };

interface StreamSettings {
  keepAliveMs: number;
  /** Aborts when the client leaves; the reply was given it too. */
  signal: AbortSignal;
  log: Logger;
  key: IdempotentOutcome<StreamOutcome> | undefined;
}

/**
 * Carries a reply over server-sent events: `delta`s as they come, then `done` or `error`, then the
 * end. The outcome is recorded for retries with the Idempotency-Key before the client hears it.
 */
export async function streamReply(res: Response, reply: Reply, settings: StreamSettings): Promise<void> {
  const { key, log, signal } = settings;
  const sse = new SSEWriter(res, { keepAliveMs: settings.keepAliveMs, signal });
  let receivedChars = 0;
  try {
    for await (const event of reply) {
      if (event.type === "delta") {
        receivedChars += event.content.length;
        sse.event("delta", { content: event.content } satisfies Delta);
      } else if (event.type === "done") {
        const { usage, citations } = event.reply;
        const tokens = { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens };
        await key?.record({ outcome: "done", user_message_id: event.input.id, assistant_message_id: event.reply.id, usage: tokens })
          .catch((error: unknown) => log.error({ err: error }, "could not record a finished stream"));
        sse.event("done", { message_id: event.reply.id, citations, usage: tokens } satisfies Done);
      } else {
        if (signal.aborted) log.info({ receivedChars }, "client disconnected; upstream call aborted");
        await key?.record({ outcome: "failed", user_message_id: event.inputId })
          .catch((error: unknown) => log.error({ err: error }, "could not record a failed stream"));
        sse.event("error", { code: event.error.code, message: event.error.message } satisfies Failed);
      }
    }
  } finally {
    sse.close();
  }
}

/** A retry of a finished streamed send: the stored reply as one delta, then the same done. */
export function replayReply(res: Response, reply: MessageRow, usage: Done["usage"], keepAliveMs: number): void {
  const sse = new SSEWriter(res, { keepAliveMs });
  sse.event("delta", { content: reply.content } satisfies Delta);
  sse.event("done", { message_id: reply.id, citations: reply.citations ?? [], ...(usage ? { usage } : {}) } satisfies Done);
  sse.close();
}
