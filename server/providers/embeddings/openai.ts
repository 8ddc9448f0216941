import type { Config } from "../../config.ts";
import { UpstreamError } from "../llm/types.ts";
import type { EmbeddingResult, EmbeddingsProvider } from "./types.ts";

// PLACEHOLDER: being replaced by the `openai` package implementation.
export class OpenAIEmbeddings implements EmbeddingsProvider {
  readonly name = "openai";
  readonly model: string;
  constructor(settings: Config["embeddings"], _llm: Config["llm"]) {
    this.model = settings.model;
  }
  async embed(_texts: string[]): Promise<EmbeddingResult> {
    throw new UpstreamError("The OpenAI embeddings provider is not built yet");
  }
}
