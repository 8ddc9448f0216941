import type { Services } from "../services.ts";

/** A knowledge chunk chosen for a reply's context, and what the reply cites. */
export interface RetrievedChunk {
  chunk_id: string;
  document_id: string;
  filename: string;
  chunk_index: number;
  similarity: number;
  content: string;
}

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
 * The chunks of the persona's knowledge base most relevant to the user's message, best first.
 * Called by chat context assembly; the knowledge area fills it in. PLACEHOLDER: none yet.
 */
export async function retrieveForChat(_services: Services, _request: RetrievalRequest): Promise<RetrievedChunk[]> {
  return [];
}
