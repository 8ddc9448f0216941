import type { VoiceId } from "./types.ts";

/**
 * How each of the contract's six voices sounds offline. Flite ships four distinct speakers; two
 * voices are variants of them, made by resampling the synthesised audio (`pitch` > 1 raises the
 * pitch and would speed up the speech by the same factor, so Flite is first asked to speak slower
 * by `pitch / tempo`, leaving a net speed of `tempo`).
 */
export interface OfflineVoice {
  /** Flite's built-in voice: slt (US female), rms (US male), awb (Scottish male), kal16 (US male, diphone). */
  flite: "slt" | "rms" | "awb" | "kal16";
  pitch: number;
  tempo: number;
  description: string;
}

export const OFFLINE_VOICES: Record<VoiceId, OfflineVoice> = {
  alloy: { flite: "slt", pitch: 1, tempo: 1, description: "Flite slt: US English female, as recorded" },
  echo: { flite: "rms", pitch: 1, tempo: 1, description: "Flite rms: US English male, as recorded" },
  fable: { flite: "awb", pitch: 1, tempo: 1, description: "Flite awb: Scottish English male, as recorded" },
  onyx: { flite: "rms", pitch: 0.84, tempo: 0.95, description: "Flite rms lowered by 16% and 5% slower: a deep male voice" },
  nova: { flite: "slt", pitch: 1.12, tempo: 1.06, description: "Flite slt raised by 12% and 6% faster: a bright female voice" },
  shimmer: { flite: "kal16", pitch: 1.3, tempo: 1, description: "Flite kal16 raised by 30%: a light, clipped diphone voice" },
};
