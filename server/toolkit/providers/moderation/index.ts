import type { Config } from "../../config.ts";
import type { Logger } from "../../logger.ts";
import type { ModerationProvider } from "./types.ts";
import { traceModeration } from "../../tracing/media.ts";

export type { ModerationProvider, ModerationVerdict } from "./types.ts";

/** Checks nothing: the default, so that no text leaves the machine unless an operator chose a provider. */
const NO_MODERATION: ModerationProvider = { name: "none", check: async () => ({ flagged: false, categories: [] }) };

/** The configured moderation provider (MODERATION_PROVIDER): none, the offline word list, or OpenAI's moderation endpoint. */
export async function createModeration(config: Config, log?: Logger): Promise<ModerationProvider> {
  // Its calls are spans while traces are on (tracing/media.ts).
  if (config.moderation.provider === "wordlist") {
    const { WordListModeration } = await import("./wordlist.ts");
    return traceModeration(WordListModeration.load(config.moderation.wordList));
  }
  if (config.moderation.provider === "openai") {
    const { OpenAIModeration } = await import("./openai.ts");
    return traceModeration(new OpenAIModeration(config.moderation, config.llm, log));
  }
  return NO_MODERATION;
}
