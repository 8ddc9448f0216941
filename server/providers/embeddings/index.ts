import type { Config } from "../../config.ts";
import type { EmbeddingsProvider } from "./types.ts";
import { LocalEmbeddings } from "./local.ts";
import { OpenAIEmbeddings } from "./openai.ts";

export type { EmbeddingsProvider } from "./types.ts";

/** The configured embeddings provider: an OpenAI-compatible API, or the offline hashed lexical embedding. */
export function createEmbeddings(config: Config): EmbeddingsProvider {
  return config.embeddings.provider === "openai" ? new OpenAIEmbeddings(config.embeddings, config.llm) : new LocalEmbeddings();
}
