import type { Response } from "express";
import type { StreamError } from "../../../toolkit/http/error-catalogue.ts";
import { SSEWriter } from "../../../toolkit/http/sse.ts";
import type { Services } from "../../../toolkit/services.ts";
import { TERMINAL_EVENTS, type LiveGeneration } from "./registry.ts";
import { endEvent, findGeneration, generationEventsAfter, type GenerationEventRow, type GenerationRow } from "./store.ts";
import { LOST_GENERATION, recordIfLost } from "./service.ts";
import { findMessage } from "../store.ts";

/** A follower of another process's generation reads the table this often when no notification came. */
const POLL_MS = 1_000;

/**
 * Writes a generation's events after `afterSeq` as server-sent events, then follows it until its
 * `done` or `error`, and ends. From memory when this process runs it; otherwise from the table,
 * read again whenever a notification says events were stored (and every second, in case one is
 * missed). A client that leaves stops the following, never the generation.
 */
export async function followGeneration(
  services: Services,
  res: Response,
  generation: Pick<GenerationRow, "id" | "conversation_id">,
  afterSeq: number,
  started?: LiveGeneration,
): Promise<void> {
  const sse = new SSEWriter(res, { keepAliveMs: services.config.streamKeepAliveMs });
  try {
    const live = started ?? services.areas.generations.running.get(generation.id);
    if (live) await followLive(sse, live, afterSeq);
    else await followStored(services, sse, generation, afterSeq);
  } finally {
    sse.close();
  }
}

function followLive(sse: SSEWriter, live: LiveGeneration, afterSeq: number): Promise<void> {
  return new Promise((resolve) => {
    let unsubscribe = () => {};
    const write = (event: GenerationEventRow) => {
      if (event.seq <= afterSeq) return;
      sse.event(event.event, event.data, String(event.seq));
      if (TERMINAL_EVENTS.has(event.event)) end();
    };
    const end = () => {
      unsubscribe();
      sse.signal.removeEventListener("abort", end);
      resolve();
    };
    sse.signal.addEventListener("abort", end);
    // Replay and subscribe in one turn: no event can fall between them.
    for (const event of live.events) write(event);
    unsubscribe = live.subscribe(write);
    if (live.events.some((event) => TERMINAL_EVENTS.has(event.event))) end();
  });
}

async function followStored(services: Services, sse: SSEWriter, generation: Pick<GenerationRow, "id" | "conversation_id">, afterSeq: number): Promise<void> {
  const { knex } = services.db;
  const registry = services.areas.generations;
  await registry.ready();
  // Stored events, read again whenever a notification says more were stored, and every POLL_MS in case one is missed.
  const follower = registry.events.follower(generation.id, BigInt(afterSeq), POLL_MS);
  let last = afterSeq;
  try {
    for (;;) {
      const events = await follower.read();
      if (events.length > 0 && Number(events[0]!.id) > last + 1) await writePurged(services, sse, generation, last, Number(events[0]!.id));
      for (const event of events) {
        sse.event(event.type, event.data, event.id);
        last = Number(event.id);
        if (TERMINAL_EVENTS.has(event.type)) return;
      }
      if (!sse.open) return;
      // Nothing new: the generation may have lost its process (its lease ran out); then its error is stored now.
      if (events.length === 0 && (await recordIfLost(services, generation.id, last))) continue;
      if (events.length === 0 && !(await isRunning(services, generation.id))) {
        // Ended without a stored end (its process died while writing): say so rather than wait forever.
        const ended = await generationEventsAfter(knex, generation.id, last);
        if (ended.length > 0) continue;
        const end = await endEvent(knex, generation.id);
        // A lost generation's end was recorded after the fact, possibly at or before events of the
        // dead process that this client saw but that were never stored: it still has to hear the end
        // (a client that did hear it and resumes from it hears it again, which ends it all the same).
        if (end && end.seq <= last && (end.data as { code?: string } | null)?.code === LOST_GENERATION.code) sse.event(end.event, end.data, String(last + 1));
        // Otherwise the client had everything already (Last-Event-ID at or past the end).
        if (end) return;
        sse.event("error", { code: "internal_error", message: "The generation ended without a result" } satisfies StreamError, String(last + 1));
        return;
      }
      await follower.wait(sse.signal);
      if (!sse.open) return;
    }
  } finally {
    follower.close();
  }
}

async function isRunning(services: Services, id: string): Promise<boolean> {
  return (await findGeneration(services.db.knex, id))?.status === "running";
}

/**
 * The deltas of a generation that ended over an hour ago are gone: a resume from the beginning gets
 * the stored reply as one `delta` instead; a resume from a later id gets only the end.
 */
async function writePurged(services: Services, sse: SSEWriter, generation: Pick<GenerationRow, "id" | "conversation_id">, last: number, firstKept: number): Promise<void> {
  if (last > 0) return;
  sse.event("start", { generation_id: generation.id }, "1");
  const replyId = (await findGeneration(services.db.knex, generation.id))?.reply_message_id;
  const reply = replyId ? await findMessage(services.db.knex, generation.conversation_id, replyId) : undefined;
  if (reply && firstKept - 1 > 1) sse.event("delta", { content: reply.content }, String(firstKept - 1));
}
