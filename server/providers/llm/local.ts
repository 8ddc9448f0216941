import { UpstreamError, type ChatCompletion, type ChatModelProvider, type ChatRequest, type ChatStreamChunk } from "./types.ts";

// PLACEHOLDER: being replaced by the deterministic offline model.
export class LocalChatModel implements ChatModelProvider {
  readonly name = "local";
  async complete(_request: ChatRequest): Promise<ChatCompletion> {
    throw new UpstreamError("The local model is not built yet");
  }
  // eslint-disable-next-line require-yield
  async *stream(_request: ChatRequest): AsyncIterable<ChatStreamChunk> {
    throw new UpstreamError("The local model is not built yet");
  }
}
