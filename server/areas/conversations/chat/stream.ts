import type { Response } from "express";
import type { components } from "../../../../generated/openapi.d.ts";
import { SSEWriter } from "../../../toolkit/http/sse.ts";
import type { MessageRow } from "../store.ts";

type Delta = components["schemas"]["ChatStreamDelta"];
type Done = components["schemas"]["ChatStreamDone"];

/**
 * What a streamed send records for retries with its Idempotency-Key: `running` as soon as its
 * generation starts (a retry follows it), then how it ended.
 */
export type StreamOutcome =
  | { outcome: "running"; generation_id: string }
  | { outcome: "done"; user_message_id: string; assistant_message_id: string; usage?: Done["usage"]; generation_id?: string }
  /** `user_message_id` is null when not even the user message was stored. */
  | { outcome: "failed"; user_message_id: string | null; generation_id?: string };

/** A retry of a finished streamed send: the stored reply as one delta, then the same done. */
export function replayReply(res: Response, reply: MessageRow, usage: Done["usage"], keepAliveMs: number): void {
  const sse = new SSEWriter(res, { keepAliveMs });
  sse.event("delta", { content: reply.content } satisfies Delta);
  sse.event("done", {
    message_id: reply.id, citations: reply.citations ?? [], ...(usage ? { usage } : {}), ...(reply.stopped ? { stopped: true as const } : {}),
  } satisfies Done);
  sse.close();
}
