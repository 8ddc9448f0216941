// The voice area's public surface: speech to text and text to speech.
import { defineArea } from "../../toolkit/area.ts";
import { handlers } from "./handlers.ts";

export const area = defineArea({ name: "voice", handlers });
export { consumeVoiceLimit, VoiceLimiters } from "./limits.ts";
export { sendSpeech } from "./speech-response.ts";
