import type { Services } from "../../toolkit/services.ts";
import { searchKnowledge, type RetrievedChunk } from "./search.ts";

// The chunk type lives with the search that produces it (search must not import retrieval back);
// callers of retrieval keep importing it from here.
export type { RetrievedChunk };

/** A chunk goes into a reply's context only with at least this share of the best chunk's similarity. */
export const RELATIVE_SIMILARITY_FLOOR = 0.5;

export interface RetrievalRequest {
  /** The caller: retrieval never crosses owners. */
  userId: string;
  personaId: string;
  /** The user's message the reply answers. */
  query: string;
  /** Most chunks to return, best first. */
  limit: number;
  signal?: AbortSignal;
}

/**
 * The chunks of the persona's knowledge base most relevant to the user's message, best first, by
 * the same hybrid search as the query endpoint. Empty when the persona is not the caller's (a
 * public persona's knowledge is its owner's alone) or has no ready document. Throws `UpstreamError`
 * when the embeddings provider fails.
 */
export async function retrieveForChat(services: Services, request: RetrievalRequest): Promise<RetrievedChunk[]> {
  if (request.limit <= 0 || !request.query.trim()) return [];
  const hits = await searchKnowledge(services, {
    userId: request.userId,
    personaId: request.personaId,
    query: request.query,
    limit: request.limit,
    signal: request.signal,
  });
  // Only chunks above the relevance floors are found (nothing for small talk), but then fusion fills
  // `limit` with the weaker ones too; in a reply's context a barely related excerpt only misleads the
  // model, so chunks far below the best are left out as well.
  const best = Math.max(0, ...hits.map((hit) => hit.similarity));
  return hits.filter((hit) => hit.similarity >= best * RELATIVE_SIMILARITY_FLOOR);
}
