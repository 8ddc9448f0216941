import type { Task, TaskList } from "graphile-worker";
import type { Knex } from "knex";
import { addJobIn } from "../../toolkit/db/jobs.ts";
import { notFound, providerFailure } from "../../toolkit/http/error-catalogue.ts";
import { UpstreamError } from "../../toolkit/providers/errors.ts";
import type { Services } from "../../toolkit/services.ts";
import { replyConnectionFor } from "../models/index.ts";
import { findPersona, setGreetingIfMissing, type PersonaRow } from "./store.ts";

export const GREETING_TASK = "persona_greeting";

/**
 * Graphile-worker backs off exponentially (e^attempt seconds); ten attempts ride out an upstream
 * outage of about three hours before the persona is left without a greeting.
 */
export const GREETING_MAX_ATTEMPTS = 10;

/** The contract's limit on a greeting a user writes; a generated one keeps to it too. */
const GREETING_MAX_CHARS = 2000;

const GREETING_INSTRUCTION =
  "Write the one-sentence greeting you open every new conversation with, in character. Answer with the greeting only.";

/** Queues the greeting of a persona created without one, in the transaction that creates it. */
export async function enqueueGreeting(trx: Knex.Transaction, personaId: string): Promise<void> {
  await addJobIn(trx, GREETING_TASK, { personaId }, { maxAttempts: GREETING_MAX_ATTEMPTS });
}

/** Code points, not UTF-16 units, so that a cut never splits a character. */
function clip(text: string, max: number): string {
  const chars = [...text];
  return chars.length > max ? chars.slice(0, max).join("").trimEnd() : text;
}

/**
 * Asks the persona's model for its greeting and stores it unless the persona got one meanwhile.
 * A provider failure or an empty answer throws, so graphile-worker retries the job.
 */
export async function generateGreeting(services: Services, personaId: string): Promise<void> {
  const persona = await findPersona(services.db.knex, personaId);
  // Deleted, or given a greeting by its owner before the job ran: nothing to do.
  if (!persona || persona.greeting_message !== null) return;
  // Written as its creator's chats are: on their own connection when they have one (issue 40).
  const connection = await replyConnectionFor(services, persona.creator_id, persona.provider_connection_id ?? null);
  const completion = await services.providers.llm.complete({
    model: persona.model,
    purpose: "greeting",
    ...(connection ? { connection } : {}),
    maxOutputTokens: 120,
    messages: [
      { role: "system", content: `${persona.instructions}\n\n${GREETING_INSTRUCTION}` },
      // Some chat APIs refuse a context without a user turn.
      { role: "user", content: "Hello!" },
    ],
  });
  const greeting = clip(completion.content.trim(), GREETING_MAX_CHARS);
  if (!greeting) throw new UpstreamError("The model answered an empty greeting");
  const stored = await setGreetingIfMissing(services.db.knex, personaId, greeting);
  services.log.debug({ personaId, stored }, "persona greeting generated");
}

/**
 * The greeting a conversation with the persona starts with: the stored one, or, while the job has
 * not written it yet, one generated now the way the job does it and stored for the persona the same
 * way (the job then finds it set; two writers keep the first). A model that fails is the caller's
 * 502 (or 503 without a provider); nothing is stored then (docs/adr/0281-a-greeting-not-written-yet-is-generated-when-a-conversation-starts.md).
 */
export async function greetingNow(services: Services, persona: Pick<PersonaRow, "id" | "greeting_message">): Promise<string> {
  if (persona.greeting_message !== null) return persona.greeting_message;
  try {
    await generateGreeting(services, persona.id);
  } catch (error) {
    throw providerFailure(error);
  }
  const greeted = await findPersona(services.db.knex, persona.id);
  // Deleted while its greeting was being written.
  if (!greeted?.greeting_message) throw notFound("Persona");
  return greeted.greeting_message;
}

/** Jobs of the personas area. */
export function personaTasks(services: Services): TaskList {
  const greeting: Task = async (payload) => {
    const { personaId } = payload as { personaId: string };
    await generateGreeting(services, personaId);
  };
  return { [GREETING_TASK]: greeting };
}
