import type { Config } from "../../toolkit/config.ts";

/**
 * The least a chunk must score to be found at all, on each side of the hybrid search: below both, it
 * is not relevant, however few chunks are left (issue 34 item 5: "Hello there" cited every
 * document at similarity 0). The figures are measured by `node bench/relevance-floors.ts`; see
 * docs/adr/0287-an-absolute-relevance-floor-on-both-sides-of-retrieval.md.
 */
export interface RelevanceFloors {
  /** Cosine similarity (1 - cosine distance) the vector side needs. */
  similarity: number;
  /** `ts_rank_cd` (unnormalised, default weights) the full-text side needs. */
  textRank: number;
}

/**
 * The offline hashed lexical embedder: a text sharing no word with a chunk still scores up to about
 * 0.10 through hash collisions; questions about a chunk score 0.08 to 0.34, and those below the
 * floor share a word with it, which the full-text side finds.
 */
export const LOCAL_MIN_SIMILARITY = 0.15;
/**
 * OpenAI's text-embedding-3 models (and the default for other OpenAI-compatible models): unrelated
 * texts score about 0.05 to 0.25, a question and the passage that answers it about 0.35 to 0.6.
 */
export const OPENAI_MIN_SIMILARITY = 0.3;
/** text-embedding-ada-002 packs everything into a narrow high band: unrelated texts score 0.7 to 0.78. */
export const ADA_MIN_SIMILARITY = 0.8;
/**
 * One occurrence of one of the query's words scores 0.1 (weight D, no normalisation): the full-text
 * side needs a word of the query in the chunk, stopwords aside. Independent of the embeddings.
 */
export const MIN_TEXT_RANK = 0.1;

/** The floors in force: `KNOWLEDGE_MIN_SIMILARITY` when set, else the embeddings provider's and model's own. */
export function relevanceFloors(config: Pick<Config, "embeddings" | "knowledgeMinSimilarity">): RelevanceFloors {
  return { similarity: config.knowledgeMinSimilarity ?? defaultMinSimilarity(config.embeddings), textRank: MIN_TEXT_RANK };
}

function defaultMinSimilarity(embeddings: Pick<Config["embeddings"], "provider" | "model">): number {
  if (embeddings.provider === "local") return LOCAL_MIN_SIMILARITY;
  return /ada-002/i.test(embeddings.model) ? ADA_MIN_SIMILARITY : OPENAI_MIN_SIMILARITY;
}
