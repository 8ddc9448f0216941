import type { Config } from "../../config.ts";
import type { Logger } from "../../logger.ts";
import { LocalSpeech } from "./local.ts";
import type { SpeechProvider } from "./types.ts";

export type { SpeechProvider } from "./types.ts";

/** The configured speech provider: an OpenAI-compatible API, or the offline Flite voices (the default). */
export async function createSpeech(config: Config, log?: Logger): Promise<SpeechProvider> {
  if (config.speech.provider !== "openai") return new LocalSpeech();
  const { OpenAISpeech } = await import("./openai.ts");
  return new OpenAISpeech(config.speech, config.llm, log);
}
