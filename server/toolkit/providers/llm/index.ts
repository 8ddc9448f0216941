import type { Config } from "../../config.ts";
import type { Logger } from "../../logger.ts";
import type { ChatModelProvider } from "./types.ts";
import { LocalChatModel } from "./local.ts";

export type { ChatModelProvider } from "./types.ts";

/** The configured chat model provider: an OpenAI-compatible API, or the offline local model. */
export async function createChatModel(config: Config, log?: Logger): Promise<ChatModelProvider> {
  if (config.llm.provider !== "openai") return new LocalChatModel();
  const { OpenAIChatModel } = await import("./openai.ts");
  return new OpenAIChatModel(config.llm, log);
}
