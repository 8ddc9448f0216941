import type { components } from "../../../generated/openapi.d.ts";
import { providerFailure } from "../../toolkit/http/error-catalogue.ts";
import type { Transcript } from "../../toolkit/providers/speech/types.ts";
import type { Services } from "../../toolkit/services.ts";
import { checkRecording, MIME_TYPES } from "./recordings.ts";

type VoiceTtsRequest = components["schemas"]["VoiceTtsRequest"];

/** Speech that has started: the first MP3 bytes, and the rest as they come. */
export interface OpenedSpeech {
  first: Uint8Array;
  rest: AsyncIterator<Uint8Array>;
}

/**
 * Starts speaking `input` and waits for the first audio, so that a provider that refuses answers
 * a clean 502 before any byte of the response is sent. Later failures break the stream.
 */
export async function openSpeech(services: Services, input: VoiceTtsRequest, signal: AbortSignal): Promise<OpenedSpeech> {
  const iterator = services.providers.speech.synthesize({ text: input.text, voice: input.voice_id ?? "alloy", signal })[Symbol.asyncIterator]();
  try {
    const first = await iterator.next();
    return { first: first.done ? new Uint8Array(0) : first.value, rest: iterator };
  } catch (error) {
    throw providerFailure(error);
  }
}

/** Transcribes an uploaded recording after checking its kind and size. */
export async function transcribe(services: Services, file: { originalname: string; buffer: Buffer }, signal: AbortSignal): Promise<Transcript> {
  const kind = checkRecording(file.originalname, file.buffer);
  try {
    return await services.providers.speech.transcribe({ bytes: file.buffer, filename: file.originalname, mimeType: MIME_TYPES[kind] }, signal);
  } catch (error) {
    throw providerFailure(error);
  }
}
