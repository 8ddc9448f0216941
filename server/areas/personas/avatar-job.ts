import type { Task, TaskList } from "graphile-worker";
import type { Knex } from "knex";
import { addJobIn } from "../../toolkit/db/jobs.ts";
import { createImage, discardImage } from "../images/index.ts";
import type { Services } from "../../toolkit/services.ts";
import { findPersona, setAvatarIfMissing } from "./store.ts";

export const AVATAR_TASK = "persona_avatar";

/** Retries ride out an image provider's outage of about an hour (graphile-worker: e^attempt seconds). */
export const AVATAR_MAX_ATTEMPTS = 8;

/** Automatic avatars are drawn at half the contract's size, 512x512: plenty for a profile picture. */
const AVATAR_SCALE = 0.5;

/** Whether a persona created without an avatar gets one from a job. */
export function autoAvatars(services: Services): boolean {
  return services.config.images.autoAvatars && services.config.images.provider !== "off";
}

/** Queues the avatar of a persona created without one, in the transaction that creates it. */
export async function enqueueAvatar(trx: Knex.Transaction, personaId: string): Promise<void> {
  await addJobIn(trx, AVATAR_TASK, { personaId }, { maxAttempts: AVATAR_MAX_ATTEMPTS });
}

/** What the avatar is drawn from: the persona's name and description (the offline default seeds on it). */
export function avatarPrompt(persona: { name: string; description: string }): string {
  const text = `${persona.name}${persona.description ? `: ${persona.description}` : ""}`;
  return [...text.padEnd(3, ".")].slice(0, 500).join("");
}

/**
 * Draws the persona's avatar and sets it unless the persona has one by then: an avatar the owner
 * set meanwhile wins, and the drawn one is thrown away. A provider failure throws, so
 * graphile-worker retries the job.
 */
export async function generateAvatar(services: Services, personaId: string): Promise<void> {
  const persona = await findPersona(services.db.knex, personaId);
  if (!persona || persona.avatar_url !== null) return;
  const image = await createImage(services, persona.creator_id, { prompt: avatarPrompt(persona), style: "avatar", aspectRatio: "1:1", scale: AVATAR_SCALE }, persona.id);
  const stored = await setAvatarIfMissing(services.db.knex, personaId, image.url);
  if (!stored) await discardImage(services, image);
  services.log.debug({ personaId, stored }, "persona avatar generated");
}

/** Jobs of automatic avatars. */
export function avatarTasks(services: Services): TaskList {
  const avatar: Task = async (payload) => {
    const { personaId } = payload as { personaId: string };
    await generateAvatar(services, personaId);
  };
  return { [AVATAR_TASK]: avatar };
}
