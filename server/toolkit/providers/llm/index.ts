import type { Config } from "../../config.ts";
import type { Logger } from "../../logger.ts";
import { modelRegistry } from "../../models/index.ts";
import type { ChatModelProvider } from "./types.ts";
import { RegistryChatModel } from "./router.ts";
import { traceChatModel } from "../../tracing/models.ts";

export type { ChatModelProvider } from "./types.ts";

/**
 * The chat model provider: the model registry's (the models file, or the chat settings' one
 * upstream or the offline model), each call routed to the provider of its model or to a user's own
 * connection (router.ts). The registry is built here, at start: a models file with a bad entry
 * stops the start with a message naming it.
 */
export async function createChatModel(config: Config, log?: Logger): Promise<ChatModelProvider> {
  const registry = modelRegistry(config.llm);
  const router = new RegistryChatModel(registry, { timeoutMs: config.llm.timeoutMs, maxRetries: config.llm.maxRetries, connectionsAllowPrivate: config.connections.allowPrivateUrls }, log);
  // Its calls are spans while traces are on (tracing/models.ts).
  return traceChatModel(router);
}
