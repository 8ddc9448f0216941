import type { Config } from "../../config.ts";
import { LocalSpeech } from "./local.ts";
import type { SpeechProvider } from "./types.ts";

export type { SpeechProvider } from "./types.ts";

/** The configured speech provider: an OpenAI-compatible API, or the offline Flite voices. */
export async function createSpeech(config: Config): Promise<SpeechProvider> {
  if (config.speech.provider !== "openai") return new LocalSpeech();
  const { OpenAISpeech } = await import("./openai.ts");
  return new OpenAISpeech(config.speech, config.llm);
}
