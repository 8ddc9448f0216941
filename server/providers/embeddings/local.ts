import { LOCAL_EMBEDDINGS_MODEL } from "../../config.ts";
import { UpstreamError } from "../llm/types.ts";
import type { EmbeddingResult, EmbeddingsProvider } from "./types.ts";

// PLACEHOLDER: being replaced by the hashed lexical embedding.
export class LocalEmbeddings implements EmbeddingsProvider {
  readonly name = "local";
  readonly model = LOCAL_EMBEDDINGS_MODEL;
  async embed(_texts: string[]): Promise<EmbeddingResult> {
    throw new UpstreamError("The local embedder is not built yet");
  }
}
