/** Every stored embedding has this many dimensions (DECISIONS: one `vector(1536)` column). */
export const EMBEDDING_DIMENSIONS = 1536;

export interface EmbeddingResult {
  /** One vector per input, in input order, each of `EMBEDDING_DIMENSIONS` (zero-padded when the model has fewer). */
  vectors: number[][];
  model: string;
  inputTokens: number;
}

/** Turns texts into vectors; throws `UpstreamError` (server/toolkit/providers/errors.ts) when the provider fails. */
export interface EmbeddingsProvider {
  readonly name: string;
  readonly model: string;
  embed(texts: string[], signal?: AbortSignal): Promise<EmbeddingResult>;
}
