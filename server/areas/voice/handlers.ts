import { missingMultipartField } from "../../toolkit/http/error-catalogue.ts";
import { HANDLED, type Handler, type HandlerMap } from "../../toolkit/http/router.ts";
import { abortOnClose } from "../../toolkit/http/sse.ts";
import { consumeVoiceLimit } from "./limits.ts";
import { transcribe } from "./service.ts";
import { sendSpeech } from "./speech-response.ts";

/** The MP3 is streamed (chunked) as the provider produces it: the first sentence plays while the rest is synthesised. */
const voice_tts: Handler<"voice_tts"> = async ({ services, principal, body, res, log }) => {
  await consumeVoiceLimit(services, "voice_tts", principal.userId, res);
  await sendSpeech(services, res, body, log);
  return HANDLED;
};

const voice_stt: Handler<"voice_stt"> = async ({ services, principal, req, res }) => {
  await consumeVoiceLimit(services, "voice_stt", principal.userId, res);
  const files = (req.files ?? []) as { fieldname: string; originalname: string; buffer: Buffer }[];
  const audio = files.find((file) => file.fieldname === "audio");
  if (!audio) throw missingMultipartField("audio");
  return { status: 200, body: await transcribe(services, audio, abortOnClose(res)) };
};

export const handlers = { voice_tts, voice_stt } satisfies Partial<HandlerMap>;
