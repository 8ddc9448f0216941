import { providerFailure, upstreamFailed } from "../../toolkit/http/error-catalogue.ts";
import { UpstreamError } from "../../toolkit/providers/errors.ts";
import type { Services } from "../../toolkit/services.ts";
import { relevanceFloors } from "./relevance.ts";
import { hasChunks, searchChunks } from "./store.ts";

/** Candidates each ranking (vector, full text) contributes to the fusion, at least. */
const MIN_CANDIDATES = 40;
/** HNSW search breadth; `npm run bench:knowledge` measures recall@10 against an exact scan with it. */
export const HNSW_EF_SEARCH = 100;
/** The usual reciprocal-rank-fusion constant (Cormack et al.): damps the weight of the very top ranks. */
const RRF_K = 60;

/** A knowledge chunk a search found: what the query endpoint answers, a reply's context holds and the reply cites. */
export interface RetrievedChunk {
  chunk_id: string;
  document_id: string;
  filename: string;
  chunk_index: number;
  similarity: number;
  content: string;
}

export interface KnowledgeSearch {
  userId: string;
  personaId: string;
  query: string;
  limit: number;
  signal?: AbortSignal | undefined;
}

/** 1 - cosine distance as the contract states it: within 0..1, and 0 when undefined (a zero vector). */
const clamp = (similarity: number) => (Number.isFinite(similarity) ? Math.min(1, Math.max(0, similarity)) : 0);

/**
 * The persona's chunks most relevant to `query`, best first: vector and full-text rankings fused by
 * reciprocal rank, each of only the chunks at or above its relevance floor (none when nothing is
 * relevant). Only chunks of the persona owned by `userId` can match. `similarity` is each
 * chunk's own cosine similarity to the query; the order is the fused one, so a chunk that ranks
 * high on its words may come before one with a higher similarity. Throws `UpstreamError` when the
 * embeddings provider fails.
 */
export async function searchKnowledge(services: Services, search: KnowledgeSearch): Promise<RetrievedChunk[]> {
  // Most personas have no knowledge: do not pay for an embeddings call to find nothing.
  if (!(await hasChunks(services.db.knex, search.personaId, search.userId))) return [];
  const { vectors } = await services.providers.embeddings.embed([search.query], search.signal);
  const embedding = vectors[0];
  if (!embedding) throw new UpstreamError("The embeddings provider answered no vector");
  const floors = relevanceFloors(services.config);
  const hits = await searchChunks(services.db.knex, {
    personaId: search.personaId,
    userId: search.userId,
    embedding,
    text: search.query,
    limit: search.limit,
    candidates: Math.max(MIN_CANDIDATES, search.limit * 4),
    efSearch: HNSW_EF_SEARCH,
    rrfK: RRF_K,
    minSimilarity: floors.similarity,
    minTextRank: floors.textRank,
  });
  return hits.map((hit) => ({
    chunk_id: hit.chunk_id,
    document_id: hit.document_id,
    filename: hit.filename,
    chunk_index: hit.chunk_index,
    similarity: clamp(Number(hit.similarity)),
    content: hit.content,
  }));
}

/** The API's answer when the embeddings provider fails: 502, as the contract declares for a query. */
export function embeddingsFailure(error: unknown): unknown {
  // The provider's status, never its text: an embeddings provider's message may quote the input.
  // Then the settings that choose the provider, when it names them (issue 34, item 9).
  return providerFailure(error, {
    upstream: (failure) => upstreamFailed(`The embeddings provider failed${failure.status ? ` (status ${failure.status})` : ""}${failure.settings ? `. ${failure.settings}.` : ""}`),
  });
}
