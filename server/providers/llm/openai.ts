import type { Config } from "../../config.ts";
import { UpstreamError, type ChatCompletion, type ChatModelProvider, type ChatRequest, type ChatStreamChunk } from "./types.ts";

// PLACEHOLDER: being replaced by the `openai` package implementation.
export class OpenAIChatModel implements ChatModelProvider {
  readonly name = "openai";
  constructor(_settings: Config["llm"]) {}
  async complete(_request: ChatRequest): Promise<ChatCompletion> {
    throw new UpstreamError("The OpenAI provider is not built yet");
  }
  // eslint-disable-next-line require-yield
  async *stream(_request: ChatRequest): AsyncIterable<ChatStreamChunk> {
    throw new UpstreamError("The OpenAI provider is not built yet");
  }
}
