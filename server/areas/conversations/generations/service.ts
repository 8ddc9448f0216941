import { notFound, type StreamError } from "../../../toolkit/http/error-catalogue.ts";
import { isUuid } from "../../../toolkit/http/text.ts";
import { generationLost } from "../../../toolkit/metrics/replies.ts";
import type { Services } from "../../../toolkit/services.ts";
import { STOP_CHANNEL } from "./registry.ts";
import { failLostGeneration, findUserGeneration, type GenerationRow } from "./store.ts";

/** How long a stop waits for the generation to end before answering its state as it is. */
const STOP_WAIT_MS = 5_000;

/** The caller's generation of their conversation; 404 for anyone else's, an unknown or a malformed id. */
export async function requireOwnGeneration(services: Services, userId: string, conversationId: string, id: string): Promise<GenerationRow> {
  const find = () => (isUuid(conversationId) && isUuid(id) ? findUserGeneration(services.db.knex, userId, conversationId, id) : Promise.resolve(undefined));
  const row = await find();
  if (!row) throw notFound("Generation");
  // Running elsewhere: if its process stopped renewing the lease, it died; record that once.
  if (row.status === "running" && !services.areas.generations.running.has(id) && (await recordIfLost(services, id))) return (await find()) ?? row;
  return row;
}

/** The `error` of a generation whose process died before it ended (its lease ran out). */
export const LOST_GENERATION: StreamError = { code: "generation_lost", message: "The process generating this reply stopped before it ended; the reply was not stored." };

/**
 * Records generation `id` as failed if its lease ran out, and wakes its followers; true when it did.
 * `afterSeq`: the last event id the asking follower has, so that its `error` comes after it.
 */
export async function recordIfLost(services: Services, id: string, afterSeq = 0): Promise<boolean> {
  if (!(await failLostGeneration(services.db.knex, id, LOST_GENERATION, afterSeq))) return false;
  generationLost();
  await services.areas.generations.events.announce(id);
  return true;
}

/**
 * Stops a running generation wherever it runs (directly here, through `STOP_CHANNEL` elsewhere) and
 * answers it once it has ended. An ended one is answered as it is: stopping it again is harmless.
 */
export async function stopGeneration(services: Services, userId: string, conversationId: string, id: string): Promise<GenerationRow> {
  const row = await requireOwnGeneration(services, userId, conversationId, id);
  if (row.status !== "running") return row;
  const registry = services.areas.generations;
  const live = registry.running.get(id);
  if (live) {
    live.stop();
    await Promise.race([live.finished, delay(STOP_WAIT_MS)]);
    return requireOwnGeneration(services, userId, conversationId, id);
  }
  await registry.ready();
  let wake = () => {};
  const stopWaking = registry.events.onStored(id, () => wake());
  try {
    await services.db.notifications.notify(STOP_CHANNEL, id);
    const deadline = Date.now() + STOP_WAIT_MS;
    for (;;) {
      const current = await requireOwnGeneration(services, userId, conversationId, id);
      if (current.status !== "running" || Date.now() >= deadline) return current;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 250);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  } finally {
    stopWaking();
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
