import type { VoiceId } from "./types.ts";

/** A sentence of a stream to speak (`last` flushes the stream's encoder), or a stream given up. */
export type FliteRequest =
  | { op: "speak"; id: number; stream: number; voice: VoiceId; text: string; last: boolean }
  | { op: "cancel"; id: number; stream: number };

/** MP3 bytes for one request (possibly none yet: the encoder buffers), or why it failed. */
export type FliteReply = { id: number; bytes: Uint8Array; samples: number; sampleRate?: number; error?: undefined } | { id: number; error: string };
