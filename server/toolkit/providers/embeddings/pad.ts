import { UpstreamError } from "../errors.ts";
import { EMBEDDING_DIMENSIONS } from "./types.ts";

/**
 * A model's vector as stored: zero-padded to `EMBEDDING_DIMENSIONS` when the model has fewer
 * (cosine similarity is unchanged by trailing zeros). A longer vector cannot be stored faithfully,
 * so it is a provider failure rather than a silent truncation.
 */
export function padEmbedding(vector: readonly number[]): number[] {
  if (vector.length > EMBEDDING_DIMENSIONS) {
    throw new UpstreamError(`The embeddings model answered ${vector.length} dimensions; at most ${EMBEDDING_DIMENSIONS} can be stored`);
  }
  if (vector.length === EMBEDDING_DIMENSIONS) return [...vector];
  const padded = new Array<number>(EMBEDDING_DIMENSIONS).fill(0);
  for (let i = 0; i < vector.length; i++) padded[i] = vector[i]!;
  return padded;
}
