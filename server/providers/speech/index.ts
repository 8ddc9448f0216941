import type { Config } from "../../config.ts";
import { LocalSpeech } from "./local.ts";
import { OpenAISpeech } from "./openai.ts";
import type { SpeechProvider } from "./types.ts";

export type { SpeechProvider } from "./types.ts";

/** The configured speech provider: an OpenAI-compatible API, or the offline Flite voices. */
export function createSpeech(config: Config): SpeechProvider {
  return config.speech.provider === "openai" ? new OpenAISpeech(config.speech, config.llm) : new LocalSpeech();
}
