import type { Config } from "../../config.ts";
import type { Logger } from "../../logger.ts";
import type { EmbeddingsProvider } from "./types.ts";
import { LocalEmbeddings } from "./local.ts";
import { traceEmbeddings } from "../../tracing/models.ts";

export type { EmbeddingsProvider } from "./types.ts";

/** The configured embeddings provider: an OpenAI-compatible API, or the offline hashed lexical embedding (the default). */
export async function createEmbeddings(config: Config, log?: Logger): Promise<EmbeddingsProvider> {
  if (config.embeddings.provider !== "openai") return traceEmbeddings(new LocalEmbeddings());
  const { OpenAIEmbeddings } = await import("./openai.ts");
  // Its calls are spans while traces are on (tracing/models.ts).
  return traceEmbeddings(new OpenAIEmbeddings(config.embeddings, config.llm, log));
}
