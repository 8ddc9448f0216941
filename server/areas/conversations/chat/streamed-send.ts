import { conflict } from "../../../toolkit/http/error-catalogue.ts";
import type { IdempotentOutcome } from "../../../toolkit/http/idempotency.ts";
import type { Logger } from "../../../toolkit/logger.ts";
import type { Services } from "../../../toolkit/services.ts";
import { startGeneration, type LiveGeneration } from "../generations/registry.ts";
import { requireOwnGeneration } from "../generations/service.ts";
import type { GenerationRow } from "../generations/store.ts";
import type { MessageRow } from "../store.ts";
import type { ReplyParts } from "./replying.ts";
import type { StreamOutcome } from "./stream.ts";
import { beginStreamedReply, findStoredReply } from "./turn.ts";

/**
 * What a streamed send answers, decided by its Idempotency-Key: the stored reply of a finished
 * attempt (`replay`), the generation an earlier attempt still runs (`follow`), or a new generation
 * (`follow` with `live`, the one this call started).
 */
export type StreamedSend =
  | { kind: "replay"; reply: MessageRow; usage: Extract<StreamOutcome, { outcome: "done" }>["usage"] }
  | { kind: "follow"; generation: Pick<GenerationRow, "id" | "conversation_id">; live?: LiveGeneration };

export interface StreamedSendRequest {
  userId: string;
  conversationId: string;
  content: string;
  /** The request's Idempotency-Key, if it has one. */
  key: IdempotentOutcome<StreamOutcome> | undefined;
  log: Logger;
  /** Whom `{{user}}` names when not the conversation's owner (an embed's anonymous visitor). */
  userName?: string;
}

/**
 * A streamed send. A retry with the Idempotency-Key while the first attempt's generation runs
 * follows it from its start; after `done` it replays the stored reply; after a failure it takes the
 * key back and answers the user message the first attempt stored. Otherwise the reply runs as a
 * generation of its own (generations/registry.ts), detached from the request that started it.
 */
export async function streamedSend(services: Services, send: StreamedSendRequest): Promise<StreamedSend> {
  const { userId, conversationId, key } = send;
  const previous = key?.previous;
  if (previous?.outcome === "done") {
    const reply = await findStoredReply(services, userId, conversationId, previous.assistant_message_id);
    key!.markReplayed();
    return { kind: "replay", reply, usage: previous.usage };
  }
  if (previous?.outcome === "running") {
    const generation = await requireOwnGeneration(services, userId, conversationId, previous.generation_id);
    key!.markReplayed();
    return { kind: "follow", generation };
  }
  const stop = new AbortController();
  // Without an Idempotency-Key the generation rides on the reply's statements: its row on the user
  // message's, its end on the reply's (a send is three statements: the turn and those two).
  const parts: ReplyParts | undefined = key ? undefined : {};
  const reply = await beginStreamedReply(services, userId, conversationId, send.content, {
    retryOf: previous?.user_message_id ?? undefined,
    stop: stop.signal,
    userName: send.userName,
    ...(parts ? { parts } : {}),
  });
  if (previous) {
    const reclaimed = await key!.reclaim().catch(async (error: unknown) => {
      await reply.cancel();
      throw error;
    });
    if (!reclaimed) {
      await reply.cancel();
      throw conflict("A request with this Idempotency-Key is still in progress");
    }
  }
  const live = await startGeneration(services, { reply, conversationId, userId, stop, key, log: send.log.child({ conversationId }), ...(parts ? { parts } : {}) });
  return { kind: "follow", generation: { id: live.id, conversation_id: conversationId }, live };
}
