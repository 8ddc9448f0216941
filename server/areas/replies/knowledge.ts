import { retrieveForChat, type RetrievedChunk } from "../knowledge/index.ts";
import type { Services } from "../../toolkit/services.ts";

/**
 * The persona's knowledge for a reply to `input`, for context sources. Knowledge is a help, not a
 * precondition: a failing retrieval is logged and the reply goes on without it.
 */
export async function personaKnowledge(
  services: Services,
  request: { userId: string; personaId: string; input: string; signal: AbortSignal },
): Promise<RetrievedChunk[]> {
  if (services.config.knowledgeContextChunks === 0) return [];
  try {
    return await retrieveForChat(services, {
      userId: request.userId,
      personaId: request.personaId,
      query: request.input,
      limit: services.config.knowledgeContextChunks,
      signal: request.signal,
    });
  } catch (error) {
    // Stopped because the reply will not run (quota refused, caller gone): nothing to report.
    if (request.signal.aborted) return [];
    services.log.warn({ err: error, personaId: request.personaId }, "knowledge retrieval failed; replying without it");
    return [];
  }
}
