import type { Config } from "../../config.ts";
import type { ChatModelProvider } from "./types.ts";
import { LocalChatModel } from "./local.ts";
import { OpenAIChatModel } from "./openai.ts";

export type { ChatModelProvider } from "./types.ts";

/** The configured chat model provider: an OpenAI-compatible API, or the offline local model. */
export function createChatModel(config: Config): ChatModelProvider {
  return config.llm.provider === "openai" ? new OpenAIChatModel(config.llm) : new LocalChatModel();
}
