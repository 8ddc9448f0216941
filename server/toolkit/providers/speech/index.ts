import type { Config } from "../../config.ts";
import type { Logger } from "../../logger.ts";
import { LocalSpeech } from "./local.ts";
import type { SpeechProvider } from "./types.ts";
import { traceSpeech } from "../../tracing/media.ts";

export type { SpeechProvider } from "./types.ts";

/** The configured speech provider: an OpenAI-compatible API, or the offline Flite voices (the default). */
export async function createSpeech(config: Config, log?: Logger): Promise<SpeechProvider> {
  // Its calls are spans while traces are on (tracing/media.ts).
  if (config.speech.provider !== "openai") return traceSpeech(new LocalSpeech());
  const { OpenAISpeech } = await import("./openai.ts");
  return traceSpeech(new OpenAISpeech(config.speech, config.llm, log));
}
