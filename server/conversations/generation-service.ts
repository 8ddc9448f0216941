import { notFound } from "../http/errors.ts";
import { isUuid } from "../http/text.ts";
import type { Services } from "../services.ts";
import { generations, onStoredEvents, STOP_CHANNEL } from "./generation.ts";
import { findUserGeneration, type GenerationRow } from "./generation-store.ts";

/** How long a stop waits for the generation to end before answering its state as it is. */
const STOP_WAIT_MS = 5_000;

/** The caller's generation of their conversation; 404 for anyone else's, an unknown or a malformed id. */
export async function requireOwnGeneration(services: Services, userId: string, conversationId: string, id: string): Promise<GenerationRow> {
  const row = isUuid(conversationId) && isUuid(id) ? await findUserGeneration(services.db.knex, userId, conversationId, id) : undefined;
  if (!row) throw notFound("Generation");
  return row;
}

/**
 * Stops a running generation wherever it runs (directly here, through `STOP_CHANNEL` elsewhere) and
 * answers it once it has ended. An ended one is answered as it is: stopping it again is harmless.
 */
export async function stopGeneration(services: Services, userId: string, conversationId: string, id: string): Promise<GenerationRow> {
  const row = await requireOwnGeneration(services, userId, conversationId, id);
  if (row.status !== "running") return row;
  const live = generations(services).running.get(id);
  if (live) {
    live.stop();
    await Promise.race([live.finished, delay(STOP_WAIT_MS)]);
    return requireOwnGeneration(services, userId, conversationId, id);
  }
  await generations(services).ready;
  let wake = () => {};
  const stopWaking = onStoredEvents(services, id, () => wake());
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
