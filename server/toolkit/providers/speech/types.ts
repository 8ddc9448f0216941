import type { components } from "../../../../generated/openapi.d.ts";

export type VoiceId = components["schemas"]["VoiceId"];
export type Transcript = components["schemas"]["VoiceTranscript"];

export interface SpeechRequest {
  /** 1 to 5,000 characters (the contract checked it). */
  text: string;
  voice: VoiceId;
  /** Aborting it stops synthesis and cancels the upstream call (a client that went away). */
  signal?: AbortSignal;
}

/** An uploaded recording whose kind was already checked by its magic bytes. */
export interface Recording {
  bytes: Uint8Array;
  filename: string;
  mimeType: string;
}

/**
 * A speech provider. `synthesize` yields MP3 bytes as they are produced, so that a caller can send
 * the first audio before the whole clip exists; a provider that refuses the request throws
 * `UpstreamError` before its first chunk. `transcribe` throws `UpstreamError` when the provider
 * fails and `ProviderUnavailableError` when there is none.
 */
export interface SpeechProvider {
  /** Provider name for logs: `openai` or `local`. */
  readonly name: string;
  synthesize(request: SpeechRequest): AsyncIterable<Uint8Array>;
  transcribe(recording: Recording, signal?: AbortSignal): Promise<Transcript>;
}

