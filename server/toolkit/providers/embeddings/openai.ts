import type OpenAI from "openai";
import { APIUserAbortError } from "openai";
import { openaiClient, providerFailures } from "../openai-client.ts";
import type { Config } from "../../config.ts";
import type { Logger } from "../../logger.ts";
import { UpstreamError } from "../errors.ts";
import { padEmbedding } from "./pad.ts";
import { EMBEDDING_DIMENSIONS, type EmbeddingResult, type EmbeddingsProvider } from "./types.ts";

// Models known to be larger than the stored size and to accept `dimensions` (Matryoshka-trained).
const SHORTENABLE = /^text-embedding-3-large/;

/**
 * Embeddings through the `openai` package, against api.openai.com or any compatible base URL.
 * A model with more than 1536 dimensions is asked for 1536 (`dimensions`): at once when it is
 * known to be larger, otherwise after its first answer shows it (remembered for later calls).
 * A smaller model's vectors are zero-padded.
 */
export class OpenAIEmbeddings implements EmbeddingsProvider {
  readonly name = "openai";
  readonly model: string;
  private readonly client: OpenAI;
  private askForDimensions: boolean;
  private readonly failure: (error: unknown) => UpstreamError;

  constructor(settings: Config["embeddings"], llm: Config["llm"], log?: Logger) {
    this.failure = providerFailures("embeddings", settings.baseUrl, log);
    this.model = settings.model;
    this.askForDimensions = SHORTENABLE.test(settings.model);
    this.client = openaiClient({ baseUrl: settings.baseUrl, apiKey: settings.apiKey, timeoutMs: llm.timeoutMs, maxRetries: llm.maxRetries });
  }

  async embed(texts: string[], signal?: AbortSignal): Promise<EmbeddingResult> {
    if (texts.length === 0) return { vectors: [], model: this.model, inputTokens: 0 };
    try {
      return await this.embedNow(texts, signal);
    } catch (error) {
      if (error instanceof APIUserAbortError || (error as Error).name === "AbortError") throw error;
      throw this.failure(error);
    }
  }

  private async embedNow(texts: string[], signal: AbortSignal | undefined): Promise<EmbeddingResult> {
    let answer = await this.request(texts, signal);
    if (!this.askForDimensions && answer.data.some((item) => item.embedding.length > EMBEDDING_DIMENSIONS)) {
      this.askForDimensions = true;
      answer = await this.request(texts, signal);
    }
    if (answer.data.length !== texts.length) {
      throw new UpstreamError(`The embeddings provider answered ${answer.data.length} vectors for ${texts.length} inputs`);
    }
    const vectors = new Array<number[]>(texts.length);
    for (const item of answer.data) {
      if (!Number.isInteger(item.index) || item.index < 0 || item.index >= texts.length) {
        throw new UpstreamError("The embeddings provider answered an out-of-range index");
      }
      vectors[item.index] = padEmbedding(item.embedding);
    }
    return { vectors, model: answer.model || this.model, inputTokens: answer.usage?.prompt_tokens ?? 0 };
  }

  private request(texts: string[], signal: AbortSignal | undefined) {
    return this.client.embeddings.create(
      { model: this.model, input: texts, ...(this.askForDimensions ? { dimensions: EMBEDDING_DIMENSIONS } : {}) },
      signal ? { signal } : {},
    );
  }
}
